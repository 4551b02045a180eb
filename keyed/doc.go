// Package keyed limits per key: per user, per IP address, per API key, with
// millions of keys and most of them idle.
//
// A Limiter keeps one algorithm state per live key, made on first use by
// the constructor it is given, and the same semantics per key as
// actor.Limiter: strict FIFO waiting per key, exact RetryAfter, cancellation
// that gives capacity back, deadlines that fail fast, and Close that fails
// every waiter with permits.ErrClosed. Keys do not wait for each other.
//
// Keys are sharded over a fixed number of owners, one goroutine each, never
// one per key: a shard's owner keeps the FIFO of every waiting key of the
// shard and one timer for all of them, armed at the earliest instant of a
// min-heap of due instants (a head's grant, or the instant a key will be
// full again). A key whose state is back to full capacity and that nobody
// waits on is dropped, so that memory follows the active keys, never the
// keys ever seen; WithMaxKeys caps the live keys so that a flood of new keys
// cannot exhaust memory (ErrTooManyKeys).
//
// When a key has nobody waiting and its algorithm has a lock-free form
// (GCRA, the token and leaky buckets, the fixed window), TryAcquire and an
// Acquire that need not wait decide on the caller's goroutine with one CAS
// on the key's state word, under the shard's read lock: never a message to
// the owner. The owner drops keys under the write lock, so a decision is
// never made on a state that is being dropped.
//
// The design, its invariants and its costs are in docs/http.md and
// docs/design.md.
package keyed
