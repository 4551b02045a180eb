// Package keyed limits per key: per user, per IP address, per API key, with
// millions of keys and most of them idle.
//
// A Limiter keeps one algorithm state per live key, made on first use by
// the constructor it is given (New), or a GCRA of one rate and burst for
// every key (NewGCRA, in the shape of redislimit.NewKeyed), and the same
// semantics per key as
// actor.Limiter: strict FIFO waiting per key, exact RetryAfter, cancellation
// that gives capacity back, deadlines that fail fast, and Close that fails
// every waiter with permits.ErrClosed. Keys do not wait for each other.
//
// Keys are sharded over a fixed number of owners, one goroutine each, never
// one per key: a shard's owner keeps the FIFO of every waiting key of the
// shard and one timer for all of them, armed at the earliest of its
// waiting keys' grants and its next pass over the shard's table. A pass
// drops the keys whose state is back to full capacity and that nobody
// waits on, so that memory follows the active keys, never the keys ever
// seen: a small table is passed over at the instant its first key is
// idle, a large one at most every 2µs a slot (about 0.45s for 125 000 keys
// in a shard). WithMaxKeys caps the live keys so that a flood of new keys
// cannot exhaust memory (ErrTooManyKeys).
//
// When every key has the same GCRA or bucket (the usual case: the
// limiter learns the configuration from the first one its constructor
// makes), a key's whole state is one atomic word of 8 bytes, an
// algorithms.Cell decided against a rate, a burst and an origin its shard
// keeps for all of them, and a live key nobody waits on costs one 16-byte
// slot of its shard's table: the key's 64-bit hash and its cell, 20 to 28
// bytes a key with the table's free slots (docs/benchmarks.md has the
// measured total). The key itself is not kept: two keys of one 64-bit hash
// share a limit, as in httprate, about 3·10⁻⁸ likely for a pair among a
// million live keys (with WithShards(1) or (2), a few times likelier: the
// table's tag keeps 62 bits of the hash, and four shards or more supply
// the two it gives up). A key of a type that holds interface values
// (Limiter[any], a struct with a field of type any) is hashed with the
// dynamic types of those values, so int64(5) and uint64(5) are two keys,
// as == says they are; such keys cost a reflection walk per request. A
// key that is not equal to itself, a NaN, is refused with ErrInvalidKey:
// it could never find its limit again.
// What only some keys need (waiters, a request at the
// owner, an algorithm of their own) is an entry in a side map, found
// through a flag in the slot. Keys whose algorithm differs keep it there.
//
// When a key has nobody waiting, TryAcquire and an Acquire that need not
// wait decide on the caller's goroutine, never with a message to the
// owner: for a cell key with one CAS on its slot's cell after a lookup in
// the shard's table, without any lock (the owner drops a cell key by
// retiring its cell, in one atomic step with the decisions, and a cell
// that moves is retired first); for a key with an entry (its own lock-free
// algorithm: GCRA or buckets of another configuration, the fixed window;
// or a cell key whose waiters have just left) under the shard's read lock,
// as the owner drops and changes those under the write lock.
//
// SetRate and SetBurst change one key's limit while it runs, as
// actor.Limiter's do for one limit: applied by the key's owner in order
// with its other requests, its waiters re-timed at once, nothing granted
// taken back. A cell key first gets a GCRA of its own that carries on
// exactly from its cell. The setting holds while the key is live (at
// least its window after the change); once the key is idle and dropped,
// the constructor's configuration applies again.
//
// The design, its invariants and its costs are in docs/http.md and
// docs/design.md.
package keyed
