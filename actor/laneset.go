package actor

import (
	"sync"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/scheduler"
)

// laneSet is what a Limiter has once it has lanes: the registry its
// callers look lanes up in, and, for its owner, the fair order of their
// waiters and their predictions. The owner switches to it once (opLanes),
// moving the FIFO's waiters into the parent's own lane in order.
type laneSet struct {
	// The callers' half: lanes by name. Creation is under mu, lookups are
	// lock-free.
	mu            sync.Mutex
	byName        sync.Map // string -> *Lane
	started       bool     // the owner has switched to lanes (under mu)
	priorityFloor int64    // SetPriorityFloor's, in millionths (under mu)
	_             [64]byte

	// The owner's half.
	fair   scheduler.Fair[*call]
	rate   *ratePolicy
	parent Lane // requests made on the Limiter itself
	// epoch moves on whenever the capacity changes (a refund, a new rate,
	// a pause, a settlement): every lane's shadow built before is stale.
	epoch uint64
	// drain is the latest lower bound known for any waiter's grant, so a
	// lower bound for the queue to empty; drainOK says that every waiter
	// queued since the queue was last empty had one, and none left.
	drain   int64
	drainOK bool
}

// Predictions for lanes.
//
// With one FIFO, a newcomer's grant is predicted exactly by one decision on
// a shadow of the algorithm in which every waiter is admitted (rate.go):
// later arrivals queue behind it, so only a cancellation, which makes it
// earlier, can change it. With lanes that no longer holds: a newcomer in an
// idle lane may be put before waiters of busy lanes that queued earlier, so
// any waiter's grant may move later after it was predicted. A prediction
// that promised the grant by its instant would over-promise. The owner
// therefore predicts a lower bound instead, one a newcomer's grant can
// never come before, whatever arrives later:
//
//	the grant of cost c in lane L >= one decision on a shadow of the
//	algorithm cloned when L became busy (or when the capacity last
//	changed), in which L's own waiters, and nobody else, are admitted at
//	their own lower bounds, from the latest grant or pause on.
//
// Inside a lane the order is FIFO, and every other lane's grant only adds
// to what the real state has admitted; the algorithms are monotone (more
// admitted, or the same admitted later, never lets anything in earlier),
// so the real grant is never before the shadow's. A cancellation in L makes
// L's shadow pessimistic, and a refund or a change of rate makes every
// shadow so: those are rebuilt when next needed.
//
// What that gives each bound (docs/fairness.md):
//
//   - a deadline before the lower bound fails at once, as it must; a later
//     one queues, and if later arrivals in other lanes push the grant past
//     it, the caller's context ends it then (context.DeadlineExceeded);
//   - WithMaxWait refuses at once a lower bound beyond it, and the owner
//     refuses a waiter whose wait runs out while queued (expiry.go), so no
//     waiter ever waits longer than it allows;
//   - TryAcquire passes no waiter in any lane, so its RetryAfter is a lower
//     bound on the queue being empty: the latest lower bound of a queued
//     waiter, or at least the head's next instant.

// laneShadow is a lane's copy of the algorithm for its predictions, owned
// by the owner goroutine; nil while the lane is idle or none is needed.
type laneShadow struct {
	alg     algorithms.Algorithm
	last    int64 // the lower bound of the lane's last waiter in alg
	epoch   uint64
	applied bool // the last prediction already admitted it in alg
}

func newLaneSet(rate *ratePolicy) *laneSet {
	s := &laneSet{rate: rate, drainOK: true}
	s.parent.weight = 1
	s.parent.flow.Init(1, 0)
	return s
}

// flowOf is the flow c waits in: its lane's, or the parent's.
func (s *laneSet) flowOf(c *call) *scheduler.Flow[*call] {
	if c.lane == nil {
		return &s.parent.flow
	}
	return &c.lane.flow
}

func (s *laneSet) laneOf(c *call) *Lane {
	if c.lane == nil {
		return &s.parent
	}
	return c.lane
}

// predictFor is the owner's prediction for c behind the waiters queued now:
// for a TryAcquire, the earliest the queue could be empty; for an Acquire,
// a lower bound on its grant (predict).
func (s *laneSet) predictFor(c *call, now, arrival int64, try, need bool) (int64, bool) {
	if try {
		return max(s.tryFloor(now), now+1), true
	}
	return s.predict(s.laneOf(c), arrival, c.node.Cost, need)
}

// predict returns a lower bound for the grant of cost arriving at arrival
// in ln, behind the waiters queued now; known is false when there is none
// better than the latest grant (an algorithm without algorithms.Cloner, or
// need false and no shadow at hand).
func (s *laneSet) predict(ln *Lane, arrival, cost int64, need bool) (grant int64, known bool) {
	sh := &ln.shadow
	if sh.alg == nil || sh.epoch != s.epoch {
		if !need || s.rate.cloner == nil {
			sh.alg = nil
			return 0, false
		}
		if !s.rebuild(ln) {
			return 0, false
		}
	}
	at := scheduler.Scheduled(sh.last, arrival)
	ok, retry := s.rate.decideOn(sh.alg, at, cost)
	sh.applied = ok
	if ok {
		return at, true
	}
	return max(retry, at+1), true
}

// rebuild clones the real state and admits ln's waiters in it, in order,
// from the latest grant or pause. O(ln's waiters).
func (s *laneSet) rebuild(ln *Lane) bool {
	sh := &ln.shadow
	sh.alg, sh.epoch, sh.applied = s.rate.cloner.Clone(), s.epoch, false
	sh.last = max(s.fair.Last(), s.fair.Held())
	decide := func(at, cost int64) (bool, int64) { return s.rate.decideOn(sh.alg, at, cost) }
	for n := ln.flow.Head(); n != nil; n = n.Next() {
		at, ok := scheduler.Predict(sh.last, n.Arrival, n.Cost, decide)
		if !ok {
			sh.alg = nil
			return false
		}
		sh.last = at
	}
	return true
}

// queued is told that c, predicted at grant (known) or not, was queued.
func (s *laneSet) queued(c *call, grant int64, known bool) {
	if !known {
		s.drainOK = false
		return
	}
	s.drain = max(s.drain, grant)
	sh := &s.laneOf(c).shadow
	if sh.alg == nil {
		return
	}
	if !sh.applied {
		if ok, _ := s.rate.decideOn(sh.alg, grant, c.node.Cost); !ok {
			sh.alg = nil // cannot happen with an exact RetryAt; rebuild
			return
		}
	}
	sh.applied, sh.last = false, grant
}

// dropped is told that the request last predicted in ln was not queued.
func (s *laneSet) dropped(ln *Lane) {
	if ln.shadow.applied {
		ln.shadow.alg = nil
	}
	ln.shadow.applied = false
}

// remove takes a waiter out wherever it is (a cancellation, an expiry, a
// cost that no longer fits): its lane's shadow had it admitted, and the
// latest bound may have been its.
func (s *laneSet) remove(c *call, at int64) bool {
	ln := s.laneOf(c)
	if !s.fair.Remove(&c.node, &ln.flow, at) {
		return false
	}
	ln.shadow = laneShadow{}
	s.drainOK = false
	return true
}

// granted is told that ln's head was granted: an idle lane gives its shadow
// back.
func (s *laneSet) granted(c *call) {
	if ln := s.laneOf(c); ln.flow.Len() == 0 {
		ln.shadow = laneShadow{}
	}
}

// forget makes every lane's shadow stale: the capacity changed.
func (s *laneSet) forget() {
	s.epoch++
	s.drainOK = false
}

// idle is told that the queue is empty.
func (s *laneSet) idle() { s.drain, s.drainOK = 0, true }

// tail is the latest lower bound of a queued waiter's grant, when every one
// had one.
func (s *laneSet) tail() (int64, bool) { return s.drain, s.drainOK && s.fair.Len() > 0 }

// tryFloor is the RetryAfter instant of a TryAcquire refused behind waiters:
// it passes none of them, so the earliest it could succeed is when the
// queue is empty, which is no earlier than the head's next instant or the
// latest lower bound of a waiter.
func (s *laneSet) tryFloor(now int64) int64 {
	floor := s.fair.Due(now)
	if t, ok := s.tail(); ok {
		floor = max(floor, t)
	}
	return floor
}

// floor is a lower bound for a newcomer's grant when nothing better is
// known: not before the latest grant, a pause, or its arrival.
func (s *laneSet) floor(arrival int64) int64 {
	return max(s.fair.Last(), s.fair.Held(), arrival)
}
