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
func (a attempt[K]) limit() permits.Quota {
	if a.e == nil {
		return permits.Quota{}
	}
	return permits.Quota{Limit: a.e.alg.Capacity()}
}

// attempt finds or makes key's entry and decides on the lock-free form of
// its algorithm if it can: under the read lock for a live key, under the
// write lock for a new one, so that the owner, which drops keys under the
// write lock, never drops a key a decision is being made on. With wait, a
// denial pins the key for the owner instead of refusing.
func (s *shard[K]) attempt(key K, cost int64, full, wait bool) (attempt[K], error) {
	s.mu.RLock()
	if e := s.keys[key]; e != nil {
		a, err := s.decide(e, cost, full, wait)
		s.mu.RUnlock()
		return a, err
	}
	s.mu.RUnlock()
	e, err := s.create(key)
	if err != nil {
		return attempt[K]{}, err
	}
	a, err := s.decide(e, cost, full, wait)
	s.mu.Unlock()
	return a, err
}

// create returns key's entry, made with the constructor if it is still
// missing, and returns with the write lock held unless it fails. The
// constructor runs outside the lock; if another caller made the key
// meanwhile, the algorithm made here is dropped.
func (s *shard[K]) create(key K) (*entry[K], error) {
	alg, err := s.l.newAlg(key)
	switch {
	case err != nil:
		return nil, &AlgorithmError{Err: err}
	case alg == nil:
		return nil, &AlgorithmError{Err: errNilAlgorithm}
	}
	s.mu.Lock()
	if e := s.keys[key]; e != nil {
		return e, nil
	}
	if n, max := s.l.keys.Add(1), s.l.cfg.maxKeys; max > 0 && n > int64(max) {
		s.l.keys.Add(-1)
		s.mu.Unlock()
		return nil, tooMany(max)
	}
	e := newEntry(key, alg)
	s.keys[key] = e
	s.peak = max(s.peak, len(s.keys))
	s.born = append(s.born, e)
	if !s.bornFlag.Swap(true) {
		s.kick()
	}
	return e, nil
}

// decide is the fast path, under the shard's lock.
func (s *shard[K]) decide(e *entry[K], cost int64, full, wait bool) (attempt[K], error) {
	if c := e.alg.Capacity(); cost > c {
		return attempt[K]{e: e}, permits.CostExceedsCapacity(cost, c)
	}
	if e.word.Load() == 1 { // lock-free, and nothing at the owner for this key
		now := s.l.cfg.clock.Now()
		var d algorithms.Decision
		var open bool
		if full {
			d, open = e.gated().TryAllowAt(now, cost)
		} else {
			var ok bool
			var retry time.Duration
			ok, retry, open = e.gated().TryAdmitAt(now, cost)
			d = algorithms.Decision{Allowed: ok, RetryAt: now.Add(retry)}
		}
		if open {
			if d.Allowed || !wait {
				return attempt[K]{e: e, verdict: vDecided, now: now, d: d}, nil
			}
			e.pin()
			return attempt[K]{e: e, verdict: vOwner, now: now}, nil
		}
	}
	if !wait {
		if w := e.w.Load(); w != nil {
			return attempt[K]{e: e, verdict: vBehind, wait: max(time.Duration(w.tail.Load()-s.l.stamp()), 1)}, nil
		}
	}
	e.pin()
	return attempt[K]{e: e, verdict: vOwner}, nil
}
