// Package actor holds sluice's owners: each limiter is owned by one
// goroutine that takes the requests arriving in its inbox in one order,
// keeps the waiters in order (package scheduler: one FIFO, or fair lanes),
// arms one timer for the whole queue, and hands permits back on each
// caller's own reply channel. Nothing the owner keeps is behind a lock, and
// a slow decision delays grants only until the owner is free again.
//
// Limiter owns a rate algorithm (package algorithms); Pool is a weighted
// concurrency limiter. Both satisfy permits.Limiter and combine with
// permits.All. When nobody waits, both decide with one atomic operation from
// the caller's goroutine, without a message; the owner keeps that fast path
// closed while it holds a request or a waiter, so it never passes one. A
// Lane is one tenant's share of a Limiter: its waiters are granted by
// weighted fair queueing against the other lanes', with priorities
// (docs/fairness.md).
//
// WithLogger writes a line to a *slog.Logger when a Limiter's state
// changes (a pause, its end, a new rate or burst), never per request; the
// lines are in docs/observability.md.
//
// Testing with limiters inside (testing/synctest, goleak, where to create
// them) is in docs/testing.md.
//
// The data path of one Acquire, the fast path and the rules of cancellation
// and Close are in docs/design.md; pools and composition in docs/permits.md.
package actor
