package sim

import (
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/scheduler"
)

// shadow is actor's prediction of when a newcomer would be granted behind
// everyone queued (actor/rate.go, ratePolicy): a copy of the algorithm with
// every queued waiter already admitted at its predicted instant. It is built
// when a prediction is first needed in a busy spell, kept up to date as
// waiters join the tail, and dropped when the queue empties. The simulator
// has no cancellations, the other thing that drops it in actor.
type shadow struct {
	alg     algorithms.Algorithm
	ok      bool
	last    int64 // scheduled instant of the last waiter in the shadow
	applied bool  // the last prediction already admitted it in the shadow
}

func (s *shadow) predict(r *run, now, cost int64) int64 {
	if !s.ok {
		s.rebuild(r, now)
	}
	// Decide once at the scheduled instant. A denial leaves the shadow as it
	// was and its retry instant is the exact prediction; an admission has
	// already taken the capacity, which queued keeps and dropped undoes.
	at := scheduler.Scheduled(s.last, now)
	ok, retry := s.decide(at, cost)
	s.applied = ok
	if ok {
		return at
	}
	return max(retry, at+1)
}

func (s *shadow) decide(at, cost int64) (bool, int64) { return decideOn(s.alg, at, cost) }

func (s *shadow) queued(r *run, at, cost int64) {
	if !s.ok {
		return
	}
	if !s.applied {
		if ok, _ := s.decide(at, cost); !ok {
			s.ok = false // cannot happen with an exact RetryAt; rebuild
			return
		}
	}
	s.applied, s.last = false, at
}

func (s *shadow) dropped() {
	if s.applied {
		s.ok = false
	}
	s.applied = false
}

func (s *shadow) idle() { s.ok, s.alg = false, nil }

// rebuild replays the queue on a fresh copy of the state, by the rule the
// scheduler grants with.
func (s *shadow) rebuild(r *run, now int64) {
	s.alg = r.cloner.Clone()
	s.last, s.applied = r.q.Last(), false
	if r.q.Len() > 0 {
		s.last = max(s.last, r.q.HeadFloor(now))
	}
	for n := r.q.Head(); n != nil; n = n.Next() {
		at, ok := scheduler.Predict(s.last, n.Arrival, n.Cost, s.decide)
		if !ok {
			return
		}
		s.last = at
	}
	s.ok = true
}
