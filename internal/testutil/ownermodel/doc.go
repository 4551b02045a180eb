// Package ownermodel is one reference-model property test for every owner
// of sluice (issue 25): actor's Limiter, its lanes, keyed's keys and
// redislimit's Limiter. Each package's test adapts its owner to Subject;
// Play drives it with a random script (Acquire with and without deadlines,
// cancellations, TryAcquire and an Acquire sent right after a refusal,
// Refund, Settle, Pause, SetRate, Close, and owner stalls through a Clock
// whose Now sleeps in the owner goroutine), records every call in a Log,
// and Check holds the Log to the same rules whatever the owner:
//
//   - the reference model: a GCRA by virtual scheduling over the grants
//     used (granted, not refunded, settled at their real cost, a debt at
//     its settlement), which every grant must conform to;
//   - the bound: over every window [t, t+d] of constant rate, the units
//     used are at most burst + floor(rate·d);
//   - FIFO per lane and per key, and no TryAcquire passes a waiter;
//   - nothing granted while a Pause holds;
//   - the weighted shares of lanes while they are backlogged together
//     (Golestani's bound for self-clocked fair queueing);
//   - Stats exact: what the harness saw, Waiting 0 at quiescence;
//   - a TryAcquire's RetryAfter is at least the real wait of the Acquire
//     sent right after it, less the time its own cost takes to come back.
//
// It is a test helper: only tests import it.
package ownermodel
