// Package fit searches, for each algorithm, the parameters that suit given
// traffic best: the configuration that admits the most units while the
// upstream never refuses any of them and the admitted requests' p99 wait
// meets a goal.
//
// Every candidate is simulated (package sim) on the same arrivals, so what
// Search reports is measured, not estimated. The search rests on an
// assumption that holds for these algorithms on almost any traffic but is
// not a theorem: along one rate (or one window length), a larger burst,
// capacity or window limit exceeds the upstream at least as readily, so a
// binary search finds the largest size that stays within it; and that size
// has the shortest waits the rate allows. A reported pick is therefore
// verified to meet the goal and is the best of those tried; one not tried
// could be better.
//
// Search runs candidates side by side on at most GOMAXPROCS goroutines and
// waits for them; its result does not depend on their timing. Separate calls
// share nothing and are safe for concurrent use.
package fit
