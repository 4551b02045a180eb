package keyed

import (
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

type verdict uint8

const (
	vDecided verdict = iota // decided on the caller's goroutine: d at now
	vBehind                 // others wait on the key: refuse, wait from now
	vOwner                  // the key is pinned: ask the owner
)

// attempt is the caller's side of a request, before any message.
type attempt[K comparable] struct {
	e       *entry[K] // the key's entry; nil for a cell key decided on its slot
	verdict verdict
	now     time.Time // the clock reading decided at, if one was read
	d       algorithms.Decision
	wait    time.Duration
	limit   int64 // the key's capacity, for a cost refused as too large
	// closed is true for an Acquire denied on its slot's cell without a
	// lock, which closed the cell's gate in the same step: the owner
	// reopens it when it answers (see shard.handle).
	closed bool
}

// limit is the Quota of a request refused before any decision.
func (s *shard[K]) limit(a attempt[K]) permits.Quota { return permits.Quota{Limit: a.limit} }

// attempt finds or makes key's state and decides on its lock-free form if
// it can. A cell key without an entry, the common case, is found and
// decided on without any lock: the table's tag says the slot is the key's,
// and a slot's cell is retired, in the word the decision CASes, before it
// is dropped, moved into an entry or copied into a new table (see table);
// a decision that finds it retired looks again under a lock. A key with an
// entry is found again and decided on under the shard's read lock, as the
// owner drops and changes those under the write lock. A new key is made,
// and first decided on, under the write lock. With wait, a denial pins the
// key for the owner instead of refusing; cost 0 (a control request:
// SetRate, SetBurst) only pins it.
//
// An Acquire denied on a slot's cell without a lock can only pin the key
// under the write lock, after promoting it; until then others would still
// decide on the cell and could take the units it waits for. So the denial
// closes the cell's gate in the same CAS (closed): from then on every
// caller finds the gate closed and looks under the lock, where a
// TryAcquire is refused as behind a waiter and an Acquire queues through
// the owner. The gate travels with the cell (a rebuild, a promotion, a
// demotion), the sweep never retires a gated cell, and the Acquire always
// reaches the owner once it has closed it (decide, decideLocked), which
// reopens it when it answers with nobody left waiting. Its cost is
// announced before the CAS and withdrawn once the key is pinned, so that a
// TryAcquire refused behind it meanwhile counts it (see closer.go).
func (s *shard[K]) attempt(key K, h uint64, cost int64, full, wait bool) (attempt[K], error) {
	id := ident(h)
	sl, tag := s.tab.Load().find(id)
	if sl == nil {
		return s.create(key, h, cost, full, wait, time.Time{}, true, false)
	}
	var now time.Time
	var closed bool
	if tag == id && cost > 0 {
		cells := s.cells()
		if c := cells.Capacity(); cost > c {
			return attempt[K]{limit: c}, permits.CostExceedsCapacity(cost, c)
		}
		now = s.l.cfg.clock.Now()
		d, open := tryCell(cells, &sl.cell, now, cost, full)
		if open && wait && !d.Allowed {
			d, open, closed = s.closeOnDenial(cells, sl, h, now, cost, full)
		}
		if open && (d.Allowed || !wait) {
			return attempt[K]{verdict: vDecided, now: now, d: d}, nil
		}
		// Denied with wait, the gate closed (now is then the request's
		// arrival), or the cell is out of use: look again under a lock.
		if closed && s.l.cfg.closed != nil {
			s.l.cfg.closed()
		}
	}
	s.mu.RLock()
	if sl, tag := s.tab.Load().find(id); sl != nil && tag&fSide != 0 {
		a, err := s.decide(s.entryOf(tag), cost, full, wait, now, closed)
		s.mu.RUnlock()
		if closed {
			s.withdraw(h, cost) // pinned by now: see closer.go
		}
		return a, err
	}
	s.mu.RUnlock()
	a, err := s.create(key, h, cost, full, wait, now, false, closed)
	if closed {
		s.withdraw(h, cost) // pinned by now, or gone with its key
	}
	return a, err
}

// closeOnDenial decides again, for an Acquire denied on its slot's cell,
// closing the gate on a denial (closed), with its cost announced first
// (see closer.go). The first decision, which cannot close, keeps the
// announcement off the path of every Acquire that is admitted.
func (s *shard[K]) closeOnDenial(cells *algorithms.Cells, sl *slot, h uint64, now time.Time, cost int64, full bool) (d algorithms.Decision, open, closed bool) {
	s.announce(h, cost)
	d, open = closeCell(cells, &sl.cell, now, cost, full)
	if closed = open && !d.Allowed; !closed {
		s.withdraw(h, cost)
	}
	return d, open, closed
}

// create decides on key under the write lock, making it with the
// constructor if it is missing. The constructor runs outside the lock
// (missing says the caller found no key, so that it runs first); if
// another caller made the key meanwhile, the algorithm made here is
// dropped. Under the write lock every slot in the table is what its tag
// says: the owner retires and buries, moves or rebuilds within one hold of
// it. closed says the caller closed the gate of the key's cell (see
// attempt); a key missing now has lost that cell with its state.
func (s *shard[K]) create(key K, h uint64, cost int64, full, wait bool, now time.Time, missing, closed bool) (attempt[K], error) {
	id := ident(h)
	if !missing {
		s.mu.Lock()
		if sl, tag := s.tab.Load().find(id); sl != nil {
			defer s.mu.Unlock()
			return s.decideLocked(sl, tag, h, cost, full, wait, now, closed)
		}
		s.mu.Unlock()
	}
	alg, err := s.l.newAlg(key)
	switch {
	case err != nil:
		return attempt[K]{}, &AlgorithmError{Err: err}
	case alg == nil || isNilPointer(alg):
		return attempt[K]{}, &AlgorithmError{Err: errNilAlgorithm}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, tag := s.tab.Load().find(id)
	if sl == nil {
		if n, max := s.l.keys.Add(1), s.l.cfg.maxKeys; max > 0 && n > int64(max) {
			s.l.keys.Add(-1)
			return attempt[K]{}, tooMany(max)
		}
		closed = false // the cell whose gate the caller closed went with the key
		now = s.l.cfg.clock.Now()
		sl, tag = s.newKey(h, alg, now)
		s.o.Poke() // the owner learns of the new key (shard.Wake)
	}
	return s.decideLocked(sl, tag, h, cost, full, wait, now, closed)
}

// decideLocked is decide for a key found under the write lock: a cell key
// without an entry is decided on its slot, and gets an entry when the
// owner must decide. A gate closed on the slot's cell is an Acquire's
// denied before the lock (see attempt), on its way here: with closed it is
// the caller's own, which goes to the owner; a TryAcquire is refused
// behind it, an Acquire queues behind it through the owner.
func (s *shard[K]) decideLocked(sl *slot, tag, h uint64, cost int64, full, wait bool, now time.Time, closed bool) (attempt[K], error) {
	if tag&fSide != 0 {
		return s.decide(s.entryOf(tag), cost, full, wait, now, closed)
	}
	cells := s.cells()
	if c := cells.Capacity(); cost > c {
		return attempt[K]{limit: c}, permits.CostExceedsCapacity(cost, c)
	}
	if cost > 0 && !closed {
		if now.IsZero() {
			now = s.l.cfg.clock.Now()
		}
		d, open := tryCell(cells, &sl.cell, now, cost, full)
		switch {
		case open && (d.Allowed || !wait):
			return attempt[K]{verdict: vDecided, now: now, d: d}, nil
		case !open:
			behind, gated := s.behindSlot(&sl.cell, h, now, cost)
			if !gated {
				now = time.Time{} // beyond what the cells count yet: the owner's clock decides
			} else if !wait {
				return attempt[K]{verdict: vBehind, wait: behind}, nil
			}
		}
	}
	a := s.pin(s.promote(sl, h), now, units(cost, wait))
	a.closed = closed
	return a, nil
}

// decide is the fast path of a key with an entry, under the shard's lock,
// read or write. now is a clock reading to decide at, or the zero Time to
// read one. With closed, the caller closed the gate of the key's cell
// before its promotion (see attempt) and goes to the owner whatever it
// finds, so that the owner reopens the gate (a cost too large for the key
// now is the owner's to refuse, too).
func (s *shard[K]) decide(e *entry[K], cost int64, full, wait bool, now time.Time, closed bool) (attempt[K], error) {
	if closed {
		a := s.pin(e, now, cost)
		a.closed = true
		return a, nil
	}
	if c := s.capacity(e); cost > c {
		return attempt[K]{e: e, limit: c}, permits.CostExceedsCapacity(cost, c)
	}
	// Lock-free, and nothing at the owner for this key.
	if w := e.word.Load(); cost > 0 && (w == fCell || w == fLockFree) {
		if now.IsZero() {
			now = s.l.cfg.clock.Now()
		}
		d, open := s.try(e, w == fCell, now, cost, full)
		if open {
			if d.Allowed || !wait {
				return attempt[K]{e: e, verdict: vDecided, now: now, d: d}, nil
			}
			return s.pin(e, now, cost), nil
		}
	}
	if !wait {
		if w := e.waiters(); e.isCell() && (w == nil || w.awaiting) {
			// Behind an Acquire that closed the gate, and those that
			// queued behind it, none judged yet (closer.go).
			if now.IsZero() {
				now = s.l.cfg.clock.Now()
			}
			if behind, ok := s.behindCloser(e, now, cost); ok {
				return attempt[K]{e: e, verdict: vBehind, wait: behind}, nil
			}
		}
		if w := e.waiters(); w != nil {
			// Refused at once with what the owner published, if that is
			// honest: a tail it knows, still ahead, and the Acquires of
			// the key on their way counted. Else the owner answers.
			if wait, ok := w.tailFor(s, e, s.l.stamp()); ok {
				return attempt[K]{e: e, verdict: vBehind, wait: time.Duration(wait)}, nil
			}
			return s.pin(e, time.Time{}, 0), nil
		}
	}
	return s.pin(e, time.Time{}, units(cost, wait)), nil
}

// pin records a request for e on its way to the owner, whose arrival is
// now when the fast path read the clock, and the units of an Acquire on
// their way (see entry.way). Under the shard's lock, so that the owner,
// which drops and demotes keys under the write lock, sees it.
func (s *shard[K]) pin(e *entry[K], now time.Time, units int64) attempt[K] {
	if units > 0 {
		e.way.Add(units)
	}
	e.word.Add(pinStep)
	return attempt[K]{e: e, verdict: vOwner, now: now}
}

// units is what an Acquire (wait) of cost puts on its way: a TryAcquire,
// which never queues, and a control request (cost 0) put none.
func units(cost int64, wait bool) int64 {
	if wait {
		return cost
	}
	return 0
}
