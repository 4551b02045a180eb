// Package actor holds sluice's owners: each limiter is owned by one
// goroutine that serialises the requests arriving on its mailbox, keeps the
// FIFO of waiters (package scheduler), arms one timer for the whole queue,
// and hands permits back on each caller's own reply channel. Nothing the
// owner keeps is behind a lock.
//
// Limiter owns a rate algorithm (package algorithms); Pool is a weighted
// concurrency limiter. Both satisfy permits.Limiter and combine with
// permits.All. When nobody waits, both decide with one atomic operation from
// the caller's goroutine, without a message; the owner closes that fast path
// while it has waiters, so it never passes one.
//
// The data path of one Acquire, the fast path and the rules of cancellation
// and Close are in docs/design.md; pools and composition in docs/permits.md.
package actor
