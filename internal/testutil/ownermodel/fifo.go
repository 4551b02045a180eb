package ownermodel

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// checkFIFO: no grant passes a waiter of its domain. A waiter is an
// Acquire that queued (it was not refused at once) and had not left: b,
// made after a, passes a when b is granted at an instant before the one a
// left at (its grant, its context's end, Close). Grants at one instant
// are a burst, in any order; a waiter that leaves at the very instant b
// is granted has left (cancellations come first in a wake-up). A
// TryAcquire passes no waiter at all: of its lane or key, and with lanes
// of any lane. Costs do not matter: the order is strict, a small request
// never passes a large one.
func (l *Log) checkFIFO() error {
	var waiting []*Call // Acquires in Seq order that queued
	for _, b := range l.Calls {
		if b.Granted {
			for _, a := range waiting {
				if a.Seq < b.Seq && l.blocks(a, b) && b.At < a.Left(l.Closed) {
					return fmt.Errorf("FIFO: %v passed %v, which waited until %v", b, a, a.Left(l.Closed))
				}
			}
		}
		if b.Kind == KindAcquire && !b.AtOnce() {
			waiting = append(waiting, b)
		}
	}
	return nil
}

// blocks reports whether waiter a must be granted before b may be.
func (l *Log) blocks(a, b *Call) bool {
	if a.Dom == b.Dom {
		return true
	}
	return l.Shared && b.Kind == KindTry
}

// checkPauses: nothing is granted after a Pause was applied and before
// its end. Pauses hold every lane, not the other keys (keyed has none).
func (l *Log) checkPauses() error {
	for _, p := range l.Pauses {
		for _, c := range l.Calls {
			if c.Granted && c.Exact && c.At > p.At && c.At < p.Until {
				return fmt.Errorf("pause: %v granted during the pause from %v to %v", c, p.At, p.Until)
			}
		}
	}
	return nil
}

// checkRetryAfter: a TryAcquire refused with RetryAfter r, returned at t,
// followed
// at once by an Acquire of the same cost in its domain that was granted
// at g, must have r >= (g - t) - cost·T, T the unit's interval at the rate
// of the moment (plus the owner's Resolution): the owner
// publishes its tail without the newcomer's own cost. Only when nothing
// that makes the wait longer came between: a Pause, a SetRate, a debt,
// Close; a stall where the owner decides at its own reading
// (Config.StallsDelay); with lanes, a waiter in another lane after; and where a
// RetryAfter behind waiters is documented as a lower bound only
// (Config.RetryLowerBound), any waiter then. A pause
// in effect at the refusal is left out too: a Pause that comes while
// waiters wait makes the RetryAfter the pause's end, before the head's
// turn (issue 25: GCRA 30/s burst 3, a grant of 3 at t0 and a waiter of 3
// due at 100ms, Pause until 80ms at 10ms: TryAcquire(3) at 30ms says
// retry after 50ms, and an Acquire then is granted at 200ms).
func (l *Log) checkRetryAfter() (checked int, err error) {
	tries := map[int]*Call{}
	for _, c := range l.Calls {
		if c.Kind == KindTry {
			tries[c.Seq] = c
		}
	}
	for _, p := range l.Calls {
		t := tries[p.ProbeOf]
		if p.ProbeOf == 0 || t == nil || !t.HasRetry || !p.Granted || !p.Exact || l.disturbed(t, p) {
			continue
		}
		checked++
		slack := time.Duration(p.Cost)*interval(l.rateAt(p.Dom, t.Returned)) + l.Resolution
		// From when the refusal returned: the owner's reading it counted
		// from is no later (a stalled owner answers late).
		if wait := p.At - t.Returned; t.Retry < wait-slack {
			return checked, fmt.Errorf("RetryAfter: %v said retry after %v, but %v waited %v (less %v of its own cost)", t, t.Retry, p, wait, slack)
		}
	}
	return checked, nil
}

// disturbed reports whether something that can make p wait longer than t
// was told came between them.
func (l *Log) disturbed(t, p *Call) bool {
	from, to := t.Arrived, p.At
	in := func(at time.Duration) bool { return at >= from && at <= to }
	for _, x := range l.Pauses {
		if in(x.At) || x.At <= from && from < x.Until {
			return true
		}
	}
	for _, x := range l.Rates {
		if in(x.At) && l.rateDom(x.Dom) == l.rateDom(p.Dom) {
			return true
		}
	}
	for _, s := range l.Stalls {
		if l.StallsDelay && s[0] <= to && s[1] >= from {
			return true
		}
	}
	for _, x := range l.Debts {
		if in(x.At) && l.rateDom(x.Dom) == l.rateDom(p.Dom) {
			return true
		}
	}
	if l.Closed <= to {
		return true
	}
	for _, c := range l.Calls {
		if c.Kind != KindAcquire || l.rateDom(c.Dom) != l.rateDom(p.Dom) {
			continue
		}
		if l.Shared && c.Dom != p.Dom && c.Seq > p.Seq && c.Arrived <= to {
			return true
		}
		if l.RetryLowerBound && c.Seq < t.Seq && !c.AtOnce() && c.Left(l.Closed) > from {
			return true
		}
	}
	return false
}

// rateAt is the rate of dom's rate domain at at.
func (l *Log) rateAt(dom int, at time.Duration) algorithms.Rate {
	r := l.Rate
	for _, c := range l.Rates {
		if c.At <= at && l.rateDom(c.Dom) == l.rateDom(dom) {
			r = c.Rate
		}
	}
	return r
}
