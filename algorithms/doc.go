// Package algorithms holds sluice's rate decisions: pure functions of
// (state, instant, cost) that never read a clock, start a goroutine or
// block.
//
//	g, err := algorithms.NewGCRA(algorithms.PerSecond(30), 1)
//	d := g.AllowAt(now, 1) // d.Allowed, d.RetryAt, d.Remaining, d.ResetAt
//
// Five algorithms, every constructor taking the rate first:
//
//   - GCRA (NewGCRA(rate, burst)): paces at the rate with bursts of up to
//     burst; at most burst + floor(rate·d) units over any interval of
//     length d. The default for rate limiting requests.
//   - TokenBucket (NewTokenBucket(rate, capacity)) and LeakyBucket
//     (NewLeakyBucket(rate, capacity)): the same admissions as GCRA, told
//     as tokens left or as a bucket's level.
//   - SlidingWindow (NewSlidingWindow(PerMinute(100))): at most the limit
//     in any window of its length, exact, with memory that follows the
//     admissions in the last window.
//   - FixedWindow (NewFixedWindow(PerMinute(100))): at most the limit in
//     each window aligned to the Unix epoch, so processes agree on the
//     boundaries; twice the limit can pass across one.
//
// Rates are Count units per Per (PerSecond, PerMinute, PerHour, Every,
// ParseRate("100/minute")). Decisions are exact to the nanosecond at every
// rate: time is counted in fractions of a nanosecond that make the rate's
// interval whole, and RetryAt names the first nanosecond at which the same
// cost passes. Bad configurations are errors matching ErrInvalidConfig,
// never panics. An instant earlier than the latest one an algorithm has
// seen counts as that latest one; no instant, however far in the past or
// the future, freezes one.
//
// Every algorithm has optional faces a limiter uses: Cloner (a copy of the
// state, for predicting when a queued request will be granted), Refunder
// (give back an admission that went unused, never more than later
// admissions have left unused, and only once), and Gated: GCRA, the buckets
// and the fixed window keep their state in one atomic word for every rate of
// up to 2^30 units per period (LockFree says which), so a limiter's fast
// path decides with one compare-and-swap from any goroutine.
//
// Cells (NewCells(rate, burst)) is that one-word form for many keys of
// one configuration, as a limiter per key keeps them: each key's whole
// state is a Cell of 8 bytes, decided exactly as a GCRA against the rate,
// the burst and an origin the Cells keeps for all of them.
//
// The algorithms are not safe for concurrent use beyond their Gated
// methods: package actor owns one per limiter and serialises the calls.
// How each decides, when to pick which, and the edges (the fixed window's
// boundary burst, time going backwards, refunds) are in docs/algorithms.md.
package algorithms
