package actor

import (
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/scheduler"
)

// ratePolicy owns an algorithm. Besides the real state it may keep a
// shadow: a copy of the algorithm with every queued waiter already admitted
// at its predicted instant, so that "when would a newcomer be granted?" is
// one or two decisions instead of a replay of the queue. The shadow is built
// lazily when a prediction is first needed, kept up to date while requests
// join the tail, and dropped when a cancellation invalidates it or the
// queue empties.
type ratePolicy struct {
	alg    algorithms.Algorithm
	gated  algorithms.Gated  // nil when alg has no fast path
	cloner algorithms.Cloner // nil when alg cannot be copied: no predictions
	epoch  time.Time

	shadow     algorithms.Algorithm
	shadowOK   bool
	shadowLast int64 // scheduled instant of the last waiter in the shadow
	applied    bool  // the last prediction already admitted it in the shadow

	last  algorithms.Receipt      // of the latest admission on the real state
	lastD algorithms.Decision     // the latest admit's decision, for quota
	cap   atomic.Int64            // the algorithm's capacity, which SetBurst changes
	win   atomic.Int64            // quota.Window of the algorithm, which SetRate changes
	lanes atomic.Pointer[laneSet] // nil until the limiter's first lane (lane.go)
	fair  atomic.Bool             // the owner is switching, or has switched, to lanes
	// cap and win are what callers' goroutines read of the configuration:
	// the algorithm's own Capacity and Rate are the owner's (a sliding
	// window changes them in place).
}

func (p *ratePolicy) t(ns int64) time.Time { return p.epoch.Add(time.Duration(ns)) }

// ns converts a decision's instant to the timeline; the zero Time (never)
// becomes 0.
func (p *ratePolicy) ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return int64(t.Sub(p.epoch))
}

func (p *ratePolicy) admit(now, cost int64, wait bool) (bool, int64) {
	var d algorithms.Decision
	if wait && p.gated != nil {
		d = p.gated.AllowOrCloseAt(p.t(now), cost) // a waiter closes the fast path
	} else {
		d = p.alg.AllowAt(p.t(now), cost)
	}
	p.lastD = d
	if d.Allowed {
		p.last = d.Receipt
		return true, 0
	}
	return false, max(p.ns(d.RetryAt), now+1)
}

func (p *ratePolicy) decide(at, cost int64) (bool, int64) {
	d := p.alg.AllowAt(p.t(at), cost)
	if d.Allowed {
		p.last = d.Receipt
		return true, 0
	}
	return false, p.ns(d.RetryAt)
}

func (p *ratePolicy) receipt() algorithms.Receipt { return p.last }

func (p *ratePolicy) quota() (remaining, reset int64) {
	return p.lastD.Remaining, max(p.ns(p.lastD.ResetAt), 0)
}

// admitted is the instant of the last admission on the timeline: at, or the
// later instant the algorithm counted it at when it had seen one.
func (p *ratePolicy) admitted(at, _ int64) int64 {
	if p.last.IsZero() {
		return at
	}
	return max(at, p.ns(p.last.At))
}

func (p *ratePolicy) shadowDecide(at, cost int64) (bool, int64) {
	d := p.shadow.AllowAt(p.t(at), cost)
	if d.Allowed {
		return true, 0
	}
	return false, p.ns(d.RetryAt)
}

// decideOn decides on a in place of the real state: a lane's shadow
// (laneset.go).
func (p *ratePolicy) decideOn(a algorithms.Algorithm, at, cost int64) (bool, int64) {
	d := a.AllowAt(p.t(at), cost)
	if d.Allowed {
		return true, 0
	}
	return false, p.ns(d.RetryAt)
}

func (p *ratePolicy) predict(q *scheduler.Queue[*call], now, arrival, cost int64, need bool) (int64, bool) {
	if !p.shadowOK {
		if !need || p.cloner == nil {
			return 0, false
		}
		p.rebuild(q, now)
	}
	// Decide once at the scheduled instant. A denial leaves the shadow as it
	// was and its retry instant is the exact prediction; an admission has
	// already taken the capacity, which queued keeps and dropped undoes.
	at := scheduler.Scheduled(p.shadowLast, arrival)
	ok, retry := p.shadowDecide(at, cost)
	p.applied = ok
	if ok {
		return at, true
	}
	return max(retry, at+1), true
}

func (p *ratePolicy) queued(at, cost int64) {
	if !p.shadowOK {
		return
	}
	if !p.applied {
		if ok, _ := p.shadowDecide(at, cost); !ok {
			p.shadowOK = false // cannot happen with an exact RetryAt; rebuild
			return
		}
	}
	p.applied, p.shadowLast = false, at
}

func (p *ratePolicy) dropped() {
	if p.applied {
		p.shadowOK = false
	}
	p.applied = false
}

func (p *ratePolicy) tail() (int64, bool) { return p.shadowLast, p.shadowOK }

// perUnit is the time each unit queued behind the tail adds to a
// newcomer's wait, for an algorithm that gives units back at a steady rate
// (GCRA, token and leaky buckets), or 0: a window gives its units back in
// steps, and an algorithm sluice does not know may do anything, so the
// caller asks the owner instead (Limiter.behind).
func (p *ratePolicy) perUnit() int64 {
	var r algorithms.Rate
	switch a := p.alg.(type) {
	case *algorithms.GCRA:
		r = a.Rate()
	case *algorithms.TokenBucket:
		r = a.Rate()
	case *algorithms.LeakyBucket:
		r = a.Rate()
	default:
		return 0
	}
	if r.Count <= 0 || r.Per <= 0 {
		return 0
	}
	return max((int64(r.Per)-1)/r.Count+1, 1) // rounded up: a prediction errs long, never short
}

func (p *ratePolicy) removed() { p.shadowOK = false }

func (p *ratePolicy) closeGate() {
	if p.gated != nil {
		p.gated.CloseGate()
	}
}

func (p *ratePolicy) idle() {
	p.shadowOK, p.shadow, p.last = false, nil, algorithms.Receipt{}
	if p.gated != nil {
		p.gated.OpenGate()
	}
}

// rebuild replays the queue on a fresh copy of the state, by the rule the
// scheduler grants with. O(waiters); only after a cancellation or when the
// first prediction of a busy spell is needed.
func (p *ratePolicy) rebuild(q *scheduler.Queue[*call], now int64) {
	p.shadow = p.cloner.Clone()
	p.shadowLast, p.applied = max(q.Last(), q.Held()), false
	if q.Len() > 0 {
		p.shadowLast = max(p.shadowLast, q.HeadFloor(now))
	}
	for n := q.Head(); n != nil; n = n.Next() {
		at, ok := scheduler.Predict(p.shadowLast, n.Arrival, n.Cost, p.shadowDecide)
		if !ok {
			return
		}
		p.shadowLast = at
	}
	p.shadowOK = true
}

// refund applies a refund on the owner, at now: the algorithm gives back
// what is left of the admission rc records.
func (p *ratePolicy) refund(now int64, rc algorithms.Receipt) bool {
	r, ok := p.alg.(algorithms.Refunder)
	return ok && r.RefundAt(p.t(now), rc)
}
