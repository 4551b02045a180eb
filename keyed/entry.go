package keyed

import (
	"sync/atomic"

	"github.com/sluicehq/sluice/algorithms"
)

// entry is what a key needs beyond its slot, for as long as it needs it:
// waiters, requests at the owner, an algorithm of its own. A cell key
// (the common key: its state is one word of its shard's algorithms.Cells,
// see cellConfig) has none while nobody waits on it and it has no request
// at the owner; it gets one, in its shard's side map, when a request for
// it must go to the owner, and gives it back once nobody waits on it and
// nothing of it is at the owner (shard.settle, or the owner's next pass). A key of any other kind keeps
// its entry, and its algorithm in x, for its whole life.
//
// While a cell key has an entry its cell is the entry's (moved out of the
// slot, see moveCell), and every decision on it is made under the shard's
// lock: the owner's, the read lock for the fast path. Only the owner moves
// it back, under the write lock.
type entry[K comparable] struct {
	h    uint64 // the key's hash: its shard and tag
	cell algorithms.Cell
	// word is the entry's shared word: the kind flags below, set at birth,
	// and the requests for this key sent to the owner and not yet answered,
	// in steps of pinStep. While any is, the fast path stays off the state,
	// so that it never passes a request the owner holds but has not yet
	// decided; and a pinned key is never dropped. Pins are taken under the
	// shard's lock, and the owner drops and moves keys under the write lock.
	word atomic.Int32
	hidx int32 // owner only: index in the shard's heap of waiting keys, -1 when not in it
	due  int64 // owner only: the instant the owner next grants the key's head
	// fullAt is the instant the owner first found or foretold the key full,
	// with nobody waiting, since it last found it in use (see idleFrom).
	// Owner only.
	fullAt int64
	// x holds what a cell key needs only while it has waiters, and what
	// any other key needs for its whole life: its algorithm.
	x atomic.Pointer[extra[K]]
	// way is the units of the key's Acquires that callers have pinned and
	// the owner has not judged yet: in its inbox, or held undecided behind
	// the Acquire that closed the key's gate (shard.await). A TryAcquire
	// refused behind that one counts them (see behindCloser). Added by
	// pin, taken off by the owner once it has judged the Acquire, after
	// it counted the judgment in took.
	way atomic.Int64
	// took counts the owner's judgments of the key's Acquires (see way):
	// a reader that finds it unchanged across its reads of the gate, the
	// queue and way has seen each Acquire in one of them (behindCloser).
	took atomic.Uint32
}

// extra is the part of an entry that most cell keys never need.
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
	fCell     = 1 << iota // the state is cell
	fLockFree             // alg has a lock-free form
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
