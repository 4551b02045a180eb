package keyed

import (
	"sync/atomic"

	"github.com/sluicehq/sluice/algorithms"
)

// entry is one live key: its algorithm, and what its shard's owner needs to
// schedule it. Every live key holds one, so its size is the memory a key
// costs beside its algorithm and its slot in the shard's map (64 bytes for
// a string key; bench/ measures the whole cost of a key).
type entry[K comparable] struct {
	alg algorithms.Algorithm
	key K
	// word is the entry's only shared word: bit 0 says whether alg has a
	// lock-free form (set at birth, never changed), the rest counts the
	// requests for this key sent to the owner and not yet answered, in
	// steps of 2. While any is, the fast path stays off the state, so that
	// it never passes a request the owner holds but has not yet decided.
	// Pins are taken under the shard's read lock, and the owner drops a key
	// only under the write lock with no pin held: a pinned key stays live.
	word atomic.Int32
	hidx int32 // owner only: index in the shard's heap, -1 when not in it
	due  int64 // owner only: the instant the owner next looks at the key
	// w holds the key's waiters while it has any; the owner sets it, the
	// fast path reads the RetryAfter it publishes.
	w atomic.Pointer[waiters[K]]
}

func newEntry[K comparable](key K, alg algorithms.Algorithm) *entry[K] {
	e := &entry[K]{alg: alg, key: key, hidx: -1}
	if g, ok := alg.(algorithms.Gated); ok && g.LockFree() {
		e.word.Store(1)
	}
	return e
}

func (e *entry[K]) lockFree() bool { return e.word.Load()&1 != 0 }

// busy reports whether requests for the key are at the owner.
func (e *entry[K]) busy() bool { return e.word.Load()>>1 != 0 }

// pin records a request sent to the owner; the caller holds the shard's
// read or write lock.
func (e *entry[K]) pin() { e.word.Add(2) }

// unpin records its answer; the owner calls it.
func (e *entry[K]) unpin() { e.word.Add(-2) }

// gated returns the lock-free form; only for an entry whose lockFree is set.
func (e *entry[K]) gated() algorithms.Gated { return e.alg.(algorithms.Gated) }
