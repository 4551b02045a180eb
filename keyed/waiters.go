package keyed

import (
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/scheduler"
)

// waiters is one key's FIFO while it has waiters, allocated when the first
// queues and dropped when the last leaves, so that an idle key costs
// nothing for it. Everything but tail is the owner's.
//
// Predictions work as in actor's rate policy: a shadow is a copy of the
// key's algorithm with every queued waiter already admitted at its
// predicted instant, so that "when would a newcomer be granted?" is one or
// two decisions instead of a replay of the queue. It is built when a
// prediction is first needed, extended as waiters join the tail, and
// dropped when a cancellation invalidates it.
type waiters[K comparable] struct {
	q       scheduler.Queue[*call[K]]
	arrived int64 // the latest arrival stamp queued: arrivals keep their order in time
	// awaiting says the queue is behind an Acquire still on its way, which
	// closed the key's gate before the owner saw it (see shard.await):
	// nothing in it is decided, granted or timed until that one comes.
	awaiting bool

	// tail is what the owner publishes for the lock-free paths: the
	// earliest instant a newcomer could be granted, as far as it knows.
	// held is the number of the key's requests it held when it published
	// tail, all of them queued: a caller that finds as many pinned knows
	// no request of the key is on its way to the owner, unseen by tail
	// (see tailFor). tail is stored before held.
	tail atomic.Int64
	held atomic.Int64

	shadow     algorithms.Algorithm
	shadowOK   bool
	shadowLast int64 // scheduled instant of the last waiter in the shadow
	applied    bool  // the last prediction already admitted it in the shadow
}

// predict returns when cost arriving at arrival would be granted behind
// every waiter of the key; known is false when the algorithm cannot be
// copied, or when need is false and telling would cost a rebuild.
func (w *waiters[K]) predict(s *shard[K], e *entry[K], now, arrival, cost int64, need bool) (grant int64, known bool) {
	if !w.shadowOK {
		if !need {
			return 0, false
		}
		shadow, ok := s.clone(e)
		if !ok {
			return 0, false
		}
		w.rebuild(s, shadow, now)
		if !w.shadowOK {
			return 0, false
		}
	}
	// Decide once at the scheduled instant: a denial leaves the shadow as
	// it was and its retry instant is the exact prediction; an admission
	// has taken the capacity already, which queued keeps and dropped undoes.
	at := scheduler.Scheduled(w.shadowLast, arrival)
	ok, retry := w.decide(s, at, cost)
	w.applied = ok
	if ok {
		return at, true
	}
	return max(retry, at+1), true
}

func (w *waiters[K]) decide(s *shard[K], at, cost int64) (bool, int64) {
	d := w.shadow.AllowAt(s.l.t(at), cost)
	if d.Allowed {
		return true, 0
	}
	return false, s.l.ns(d.RetryAt)
}

// queued is told that the request last predicted was queued to be granted
// at grant; dropped that it was not.
func (w *waiters[K]) queued(s *shard[K], grant, cost int64) {
	if !w.shadowOK {
		return
	}
	if !w.applied {
		if ok, _ := w.decide(s, grant, cost); !ok {
			w.shadowOK = false // cannot happen with an exact RetryAt; rebuild
			return
		}
	}
	w.applied, w.shadowLast = false, grant
}

func (w *waiters[K]) dropped() {
	if w.applied {
		w.shadowOK = false
	}
	w.applied = false
}

// rebuild replays the queue on shadow, a fresh copy of the state, by the
// rule the scheduler grants with: O(waiters of the key), only after a
// cancellation or for the first prediction of a busy spell.
func (w *waiters[K]) rebuild(s *shard[K], shadow algorithms.Algorithm, now int64) {
	w.shadow = shadow
	w.shadowLast, w.applied = w.q.Last(), false
	if w.q.Len() > 0 {
		w.shadowLast = max(w.shadowLast, w.q.HeadFloor(now))
	}
	decide := func(at, cost int64) (bool, int64) { return w.decide(s, at, cost) }
	for n := w.q.Head(); n != nil; n = n.Next() {
		at, ok := scheduler.Predict(w.shadowLast, n.Arrival, n.Cost, decide)
		if !ok {
			return
		}
		w.shadowLast = at
	}
	w.shadowOK = true
}

// publish tells the lock-free paths the earliest instant a newcomer could
// be granted: the head's next due instant, or the last waiter's predicted
// grant when that is known and later. With more than the head waiting and
// no prediction, it publishes 0, unknown: the head's instant would tell a
// newcomer the head's wait, not its own, and a refusal asks the owner
// instead, which predicts once (see shard.decide).
func (w *waiters[K]) publish(due int64) {
	tail := due
	if w.shadowOK {
		tail = max(tail, w.shadowLast)
	} else if w.q.Len() > 1 {
		tail = 0
	}
	w.tail.Store(tail)
	w.held.Store(int64(w.q.Len()))
}

// tailFor is the RetryAfter a TryAcquire behind e's waiters can be told
// without asking the owner, or false when the owner's word would not be
// honest: it has none, it is out of date, or a request of the key is on
// its way that it cannot count. e's pins count every request of the key
// the owner has not answered, queued or on its way, and the owner
// published how many it held queued: the difference is on its way. The
// Acquires among those queue behind the tail, so a cell key's newcomer
// waits for their units too (way, at the cells' rate); a TryAcquire on
// its way queues nothing; a key with an algorithm of its own asks the
// owner. held is read first and tail second: a held that is new brings
// the tail stored before it. The pins are read before way (a pin adds its
// units first), and took before and after: an Acquire the owner judged in
// between may be in neither the tail read nor way (see behindCloser).
func (w *waiters[K]) tailFor(s *shard[K], e *entry[K], now int64) (int64, bool) {
	for range 3 {
		took := e.took.Load()
		held := w.held.Load()
		wait := w.tail.Load() - now
		if wait <= 0 || int64(e.word.Load()/pinStep) < held {
			return 0, false
		}
		way := e.way.Load()
		switch {
		case way <= 0:
			return wait, true
		case !e.isCell():
			return 0, false
		case e.took.Load() == took:
			return int64(s.plusUnits(s.cells(), time.Duration(wait), way)), true
		}
	}
	return 0, false
}
