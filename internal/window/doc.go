// Package window counts events in a sliding window of ten time buckets with
// running totals, so that recording an event and reading the totals are
// constant-time and the memory is constant whatever the traffic.
//
// A Window of width W splits time, from its origin (the creation instant of
// its owner), into buckets of W/10. It takes instants as offsets from that
// origin, so an owner can pass time.Since(origin), which reads only the
// monotonic clock and costs about half of time.Now. Bucket k covers the instants whose offset
// d from the origin satisfies k·W/10 <= d < (k+1)·W/10. At an instant in
// bucket c, the window holds buckets c-9 to c, so an event made at t stops
// counting at the start of its bucket plus W: between 0.9·W and W after t,
// never later. The boundaries are computed as floor(10·d/W) on nanoseconds,
// so they are exact even when W is not a multiple of 10 ns.
//
// Each bucket holds three counters whose meaning the owner chooses (a retry
// budget counts deposits, withdrawals and refusals; a circuit breaker calls,
// failures and slow calls), and the window keeps their totals over the ten
// buckets.
// Moving to a later bucket subtracts the expiring buckets from the totals and
// zeroes them: at most ten bucket resets however long the window stayed idle,
// and O(1) amortised over a sequence of calls. An instant earlier than the
// latest one seen (a clock that went backwards) counts as that latest one: it
// advances nothing and its events go to the current bucket.
//
// A Window is 288 bytes and is not safe for concurrent use: its owner
// serialises calls, typically with a mutex held for the fixed amount of work
// each call does.
package window
