package keyed

import (
	"sync/atomic"

	"github.com/sluicehq/sluice/algorithms"
)

// entry is one live key: its state, and what its shard's owner needs to
// schedule it. Every live key holds one, so its size is the memory a key
// costs beside its slot in the shard's table and heap: 48 bytes for a
// string key whose state is a cell (TestEntryIsSmall; bench/ measures the
// whole cost of a key).
//
// The state is one of two kinds, fixed at birth. A cell key's state is
// cell, one word of its shard's algorithms.Cells: its algorithm was a GCRA
// or a bucket of the limiter's shared configuration (see cellConfig). Any
// other key keeps the algorithm its constructor made, in x.
type entry[K comparable] struct {
	key  K
	cell algorithms.Cell
	// word is the entry's shared word: the kind flags below, set at birth,
	// and the requests for this key sent to the owner and not yet answered,
	// in steps of pinStep. While any is, the fast path stays off the state,
	// so that it never passes a request the owner holds but has not yet
	// decided; and a pinned key is never dropped (see shard.drop).
	word atomic.Int32
	hidx int32 // owner only: index in the shard's heap, -1 when not in it
	due  int64 // owner only: the instant the owner next looks at the key
	// x holds what a cell key needs only while it has waiters, and what
	// any other key needs for its whole life: its algorithm.
	x atomic.Pointer[extra[K]]
}

// extra is the part of a key that most cell keys never need.
type extra[K comparable] struct {
	alg algorithms.Algorithm // nil for a cell key
	// w holds the key's waiters while it has any; the owner sets it, the
	// fast path reads the RetryAfter it publishes.
	w atomic.Pointer[waiters[K]]
	// keep is the instant before which a key changed by SetRate or
	// SetBurst does not count as full, so that the change outlives it
	// (see shard.full). Owner only.
	keep int64
}

const (
	fCell     = 1 << iota // the state is cell: lock-free, dropped by retiring the cell
	fLockFree             // alg has a lock-free form, decided under the shard's read lock
	pinStep               // one request at the owner
)

func (e *entry[K]) isCell() bool { return e.word.Load()&fCell != 0 }

// lockFree reports whether the fast path can decide on the key's state.
func (e *entry[K]) lockFree() bool { return e.word.Load()&(fCell|fLockFree) != 0 }

// busy reports whether requests for the key are at the owner.
func (e *entry[K]) busy() bool { return e.word.Load() >= pinStep }

// unpin records a request's answer (the owner), or a pin given up.
func (e *entry[K]) unpin() { e.word.Add(-pinStep) }

// alg returns the algorithm of a key that is not a cell key.
func (e *entry[K]) alg() algorithms.Algorithm { return e.x.Load().alg }

// waiters returns the key's waiters, or nil when it has none.
func (e *entry[K]) waiters() *waiters[K] {
	if x := e.x.Load(); x != nil {
		return x.w.Load()
	}
	return nil
}

// setWaiters makes w (nil: none) the key's waiters. A cell key gives its
// extra back with its last waiter. Owner only.
func (e *entry[K]) setWaiters(w *waiters[K]) {
	x := e.x.Load()
	switch {
	case x == nil && w == nil:
	case x == nil:
		x = new(extra[K])
		x.w.Store(w)
		e.x.Store(x)
	case w == nil && x.alg == nil:
		x.w.Store(nil)
		e.x.Store(nil)
	default:
		x.w.Store(w)
	}
}
