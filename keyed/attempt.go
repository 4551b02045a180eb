package keyed

import (
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

type verdict uint8

const (
	vDecided verdict = iota // the fast path decided: d at now
	vBehind                 // others wait on the key: refuse, wait from now
	vOwner                  // the key is pinned: ask the owner
	vGone                   // the owner dropped the entry meanwhile: look again under the write lock
)

// attempt is the caller's side of a request, before any message.
type attempt[K comparable] struct {
	e       *entry[K]
	verdict verdict
	now     time.Time // the fast path's clock reading, if it read one
	d       algorithms.Decision
	wait    time.Duration
}

// limit is the Quota of a request refused before any decision.
func (s *shard[K]) limit(a attempt[K]) permits.Quota {
	if a.e == nil {
		return permits.Quota{}
	}
	return permits.Quota{Limit: s.capacity(a.e)}
}

// attempt finds or makes key's entry and decides on the lock-free form of
// its state if it can. A live cell key is found and decided on without any
// lock: the owner drops a cell only by retiring it, in the same atomic word
// the decision is made on, so a decision is either made before (and the
// cell is no longer full: the owner keeps it) or finds it retired and
// looks again. Another key is found again and decided on under the shard's
// read lock, as the owner drops those under the write lock. A new key is
// made, and first decided on, under the write lock. With wait, a denial
// pins the key for the owner instead of refusing; cost 0 (a control
// request: SetRate, SetBurst) only pins it.
func (s *shard[K]) attempt(key K, h uint64, cost int64, full, wait bool) (attempt[K], error) {
	if e := s.tab.Load().find(key, h, s.l.tomb); e != nil {
		if e.isCell() {
			if a, err := s.decide(e, cost, full, wait, time.Time{}, false); a.verdict != vGone {
				return a, err
			}
		} else {
			// Found again under the read lock, the key is live: the owner
			// drops these under the write lock.
			s.mu.RLock()
			if e = s.tab.Load().find(key, h, s.l.tomb); e != nil {
				a, err := s.decide(e, cost, full, wait, time.Time{}, true)
				s.mu.RUnlock()
				return a, err
			}
			s.mu.RUnlock()
		}
	}
	e, now, err := s.create(key, h)
	if err != nil {
		return attempt[K]{}, err
	}
	a, err := s.decide(e, cost, full, wait, now, true) // never vGone: nothing is dropped or detached under the write lock
	s.mu.Unlock()
	return a, err
}

// create returns key's entry, made with the constructor if it is still
// missing, and the clock reading it was made at (or the zero Time), and
// returns with the write lock held unless it fails. The
// constructor runs outside the lock; if another caller made the key
// meanwhile, the algorithm made here is dropped. Under the write lock
// every entry in the table is live: the owner retires and removes a cell
// within one hold of it.
func (s *shard[K]) create(key K, h uint64) (*entry[K], time.Time, error) {
	alg, err := s.l.newAlg(key)
	switch {
	case err != nil:
		return nil, time.Time{}, &AlgorithmError{Err: err}
	case alg == nil:
		return nil, time.Time{}, &AlgorithmError{Err: errNilAlgorithm}
	}
	s.mu.Lock()
	if e := s.tab.Load().find(key, h, s.l.tomb); e != nil {
		return e, time.Time{}, nil
	}
	if n, max := s.l.keys.Add(1), s.l.cfg.maxKeys; max > 0 && n > int64(max) {
		s.l.keys.Add(-1)
		s.mu.Unlock()
		return nil, time.Time{}, tooMany(max)
	}
	now := s.l.cfg.clock.Now()
	e := s.newEntry(key, alg, now)
	s.insert(e, h)
	s.born = append(s.born, e)
	if !s.bornFlag.Swap(true) {
		s.kick()
	}
	return e, now, nil
}

// decide is the fast path: under the shard's lock (locked) for a key that
// is not a cell key, lock-free for a cell key. now is a clock reading to
// decide at, or the zero Time to read one.
//
// A cell key found without a lock may stop being one while the caller
// looks: the owner detaches its cell to give it a configuration of its own
// (SetRate), under the write lock and in one atomic step with the
// decisions on the cell. Such a caller decides only on the cell, which
// then reports the gate closed, and never on the key's new algorithm
// without the read lock (the owner drops those under the write lock): pin
// sends it to look again.
func (s *shard[K]) decide(e *entry[K], cost int64, full, wait bool, now time.Time, locked bool) (attempt[K], error) {
	if c := s.capacity(e); cost > c {
		return attempt[K]{e: e}, permits.CostExceedsCapacity(cost, c)
	}
	// Lock-free, and nothing at the owner for this key.
	if w := e.word.Load(); cost > 0 && (w == fCell || locked && w == fLockFree) {
		if now.IsZero() {
			now = s.l.cfg.clock.Now()
		}
		d, open := s.try(e, w == fCell, now, cost, full)
		if open {
			if d.Allowed || !wait {
				return attempt[K]{e: e, verdict: vDecided, now: now, d: d}, nil
			}
			return s.pin(e, now, locked), nil
		}
	}
	// A retired cell has no waiters: pin finds it gone.
	if !wait {
		if w := e.waiters(); w != nil {
			return attempt[K]{e: e, verdict: vBehind, wait: max(time.Duration(w.tail.Load()-s.l.stamp()), 1)}, nil
		}
	}
	return s.pin(e, time.Time{}, locked), nil
}

// pin records a request for e on its way to the owner, whose arrival is
// now when the fast path read the clock. A cell key is pinned without a
// lock: the pin is counted first, and then the cell looked at; the owner
// retires a cell first, and then looks at the pins (shard.drop). So either
// the owner sees the pin and revives the cell, or the caller sees the cell
// retired, takes its pin back and looks for the key under the write lock.
// A caller without a lock that finds the key no longer a cell (detached)
// looks again the same way: only under a lock may it pin such a key.
func (s *shard[K]) pin(e *entry[K], now time.Time, locked bool) attempt[K] {
	e.word.Add(pinStep)
	if !locked && (!e.isCell() || s.cells().Retired(&e.cell)) {
		e.unpin()
		return attempt[K]{verdict: vGone}
	}
	return attempt[K]{e: e, verdict: vOwner, now: now}
}
