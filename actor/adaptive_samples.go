package actor

import "sync/atomic"

// sampleRing carries reported outcomes from any goroutine to the owner: a
// bounded queue of many producers and one consumer, in the manner of
// Dmitry Vyukov's bounded MPMC queue. A producer reserves a cell with one
// CAS on tail, writes it, and publishes it by its sequence number; the
// owner reads the cells in order while they are published. When the ring
// is full the sample is lost (counted): a release never waits for the
// owner, and a controller decides as well on most of a millisecond's
// samples as on all of them.
type sampleRing struct {
	tail  atomic.Uint64 // next cell to reserve
	_     [56]byte      // tail is the producers' line, head the owner's
	head  atomic.Uint64 // next cell the owner reads; written by the owner only, once a drain
	lost  atomic.Int64
	_     [48]byte
	cells [ringSize]sampleCell
}

const ringSize = 1024 // a power of two; 40 KiB; a million samples a second at one drain a millisecond

type sampleCell struct {
	seq           atomic.Uint64 // pos: free for the producer of pos; pos+1: published
	granted, done int64
	inFlight      int64
	outcome       Outcome
}

func (r *sampleRing) init() {
	for i := range r.cells {
		r.cells[i].seq.Store(uint64(i))
	}
}

// put queues a sample and reports whether the owner must be poked: the
// owner had read every cell before this one, so no wake-up is asked for
// it yet (the owner keeps its timer armed while cells are reserved but
// not yet published).
func (r *sampleRing) put(granted, done, inFlight int64, o Outcome) (poke bool) {
	for {
		pos := r.tail.Load()
		c := &r.cells[pos&(ringSize-1)]
		switch seq := c.seq.Load(); {
		case seq == pos:
			if !r.tail.CompareAndSwap(pos, pos+1) {
				continue
			}
			c.granted, c.done, c.inFlight, c.outcome = granted, done, inFlight, o
			c.seq.Store(pos + 1)
			return r.head.Load() == pos
		case seq < pos:
			// Full: the owner has not read this cell's last round. The put
			// that found the ring empty has asked for a wake-up already.
			r.lost.Add(1)
			return false
		}
	}
}

// take calls f with each published sample in order, and reports whether
// cells are reserved that were not yet published. Owner only.
func (r *sampleRing) take(f func(c *sampleCell)) (pending bool) {
	pos := r.head.Load()
	for {
		c := &r.cells[pos&(ringSize-1)]
		if c.seq.Load() != pos+1 {
			break
		}
		f(c)
		c.seq.Store(pos + ringSize)
		pos++
	}
	// Once, not per cell: a producer reads head on every put, and a line
	// the owner wrote per cell would travel between the cores each time.
	// A producer that saw the old head does not poke; the check below
	// finds its cell and keeps the timer armed.
	r.head.Store(pos)
	return r.tail.Load() != pos
}

// empty reports whether no cell is reserved past what the owner read.
func (r *sampleRing) empty() bool { return r.tail.Load() == r.head.Load() }
