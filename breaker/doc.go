// Package breaker provides a circuit breaker: after enough failures it
// fails calls fast for a while instead of sending them to a downstream that
// is not answering, then lets a few probes through to see whether it has
// recovered.
//
// A Breaker is Closed (calls run), Open (calls fail at once with an
// *OpenError matching ErrOpen, and are never run) or HalfOpen (at most
// HalfOpenProbes calls run at once; that many successes close it, any
// failure opens it again for a fresh timeout):
//
//	Closed --(failures reach the threshold)--> Open
//	Open --(OpenTimeout elapsed, on the next call or State)--> HalfOpen
//	HalfOpen --(HalfOpenProbes successes)--> Closed
//	HalfOpen --(a probe fails)--> Open
//	HalfOpen --(probes held every slot for HalfOpenTimeout, on the next call)--> Open
//
// It trips in one of two modes. Count mode, the default, opens after n
// consecutive failures (WithConsecutiveFailures). Rate mode
// (WithFailureRate) opens when, over a sliding window, at least minCalls
// outcomes were recorded and the share of failures reaches the rate. The
// window counts in ten buckets of window/10 with running totals (package
// internal/window): constant memory and constant time per call, and an
// outcome stops counting between 0.9·window and window after it was
// recorded, at its bucket's start plus the window.
//
// A call's outcome is a Success, a Failure or Ignored (WithClassifier): an
// ignored outcome, such as the caller's own cancellation or a 429 from a
// quota, does not count at all. A call slower than WithSlowCallThreshold is
// a failure even if it succeeded, in both modes.
//
// Every outcome belongs to the state it was admitted in: an outcome that
// arrives after the breaker changed state (a slow call admitted while Closed
// that ends after the breaker opened, a stale probe) is ignored. It neither
// counts nor frees a probe slot. A probe that never reports cannot wedge the
// breaker: the half-open timeout (by default the open timeout, at least a
// minute) reopens it and makes such probes stale.
//
// For operators: Snapshot returns the state and the counts, ForceOpen and
// Reset take over during an incident, WithName names the breaker in its
// errors and its hook, and WithOpenTimeoutGrowth lengthens the open spells
// while the downstream stays down. The hook (WithOnTransition) runs without
// any lock; a transition made while it runs is delivered as soon as it
// returns, with no further call needed, and its delivery is bounded: a storm
// of transitions keeps the latest four and counts the others, and passes from
// caller to caller rather than holding one. WithLogger writes a line per
// transition (to a *slog.Logger) through the same delivery, never a line
// per call.
//
// The breaker reads package time, so tests can drive it with
// testing/synctest. See docs/resilience.md for the semantics in full, and
// package retry for a retry loop that combines a breaker with a retry budget
// (package budget) and a rate limiter (package actor).
package breaker
