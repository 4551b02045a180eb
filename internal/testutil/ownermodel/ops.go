package ownermodel

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice/permits"
)

// acquire starts an Acquire in dom, with a deadline now and then; probeOf
// is the TryAcquire it follows at once (0: none).
func (d *driver) acquire(dom int, cost int64, probeOf int) {
	c := d.newCall(KindAcquire, dom, cost)
	c.ProbeOf = probeOf
	ctx, cancel := context.WithCancel(context.Background())
	if probeOf == 0 && d.rng.IntN(4) == 0 {
		c.Deadline = c.Arrived + time.Duration(1+d.rng.Int64N(6*int64(interval(d.cfg.Rate))))
		var end context.CancelFunc
		ctx, end = context.WithDeadline(ctx, d.t0.Add(c.Deadline))
		prev := cancel
		cancel = func() { end(); prev() }
	}
	d.cancels[c] = cancel
	d.blocked.Add(1)
	d.wg.Go(func() {
		g, err := d.s.Acquire(ctx, dom, cost)
		d.returned(c, g, err)
		d.blocked.Add(-1)
	})
	d.settle()
}

// cancel cancels an Acquire that has not returned.
func (d *driver) cancel() {
	d.mu.Lock()
	var blocked []*Call
	for _, c := range d.log.Calls {
		if c.Kind == KindAcquire && c.Returned < 0 && c.Canceled == 0 {
			blocked = append(blocked, c)
		}
	}
	d.mu.Unlock()
	if len(blocked) == 0 {
		return
	}
	c := blocked[d.rng.IntN(len(blocked))]
	d.mu.Lock()
	c.Canceled = d.now()
	d.mu.Unlock()
	d.cancels[c]()
	d.settle()
}

// try makes a TryAcquire and, after a refusal, now and then an Acquire of
// the same cost in its domain at once, whose wait its RetryAfter bounds.
func (d *driver) try() {
	dom, cost := d.rng.IntN(d.cfg.Domains), d.cost()
	c := d.newCall(KindTry, dom, cost)
	g, err := d.s.TryAcquire(dom, cost)
	d.returned(c, g, err)
	if c.HasRetry && !d.closed && d.rng.IntN(2) == 0 {
		d.acquire(dom, cost, c.Seq)
	}
}

// held returns a grant among the latest few, if any; with fresh, one
// neither refunded nor settled.
func (d *driver) held(fresh bool) *Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	var hs []*Call
	for _, c := range d.log.Calls {
		if c.Granted && c.grant.P.Cost() > 0 && (!fresh || !c.Refunded && !c.Settled) {
			hs = append(hs, c)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	return hs[len(hs)-1-d.rng.IntN(min(len(hs), 6))]
}

// refund refunds a grant, sometimes one refunded or settled before, which
// must give back nothing.
func (d *driver) refund() {
	r, ok := d.s.(Refunder)
	c := d.held(false)
	if !ok || c == nil {
		return
	}
	d.log.Decision++
	back := r.Refund(c.grant)
	d.note("refund", c.Seq, 0, back)
	if back && (c.Refunded || c.Settled) {
		d.fail("a refund of %v, refunded or settled before, gave something back", c)
	}
	if back {
		d.mu.Lock()
		c.Refunded = true
		d.log.Refunds++
		d.mu.Unlock()
	}
}

// settleGrant settles a grant at between 0 and twice its cost. Never one
// refunded or settled before: the algorithms' book of spent receipts
// forgets those whose slot is past (algorithms/refund.go, record), after
// which a second settlement is applied, and one above the cost charges its
// debt again (issue 25; the report of the harness's first runs).
func (d *driver) settleGrant() {
	s, ok := d.s.(Settler)
	c := d.held(true)
	if !ok || c == nil {
		return
	}
	d.log.Decision++
	actual := d.rng.Int64N(2*c.Cost + 1)
	err := s.Settle(c.grant, actual)
	d.note("settle", c.Seq, actual, err)
	switch {
	case err == nil && (c.Refunded || c.Settled):
		d.fail("a settlement of %v, refunded or settled before, was applied", c)
	case err == nil:
		d.mu.Lock()
		c.Settled, c.Actual = true, actual
		d.mu.Unlock()
		if actual > c.Cost {
			d.log.Debts = append(d.log.Debts, Debt{At: d.now(), Dom: c.Dom, Units: actual - c.Cost})
		}
	case !errors.Is(err, permits.ErrUnknownGrant) && !errors.Is(err, permits.ErrClosed):
		d.fail("Settle(%v, %d): %v", c, actual, err)
	}
}

// pause pauses for up to four intervals. The pause holds from when Pause
// returned: the owner applies it at its own reading, which a stall makes
// later than the call.
func (d *driver) pause() {
	p, ok := d.s.(Pauser)
	if !ok {
		return
	}
	d.log.Decision++
	until := d.now() + time.Duration(1+d.rng.Int64N(4*int64(interval(d.cfg.Rate))))
	err := p.Pause(d.t0.Add(until))
	d.note("pause until "+until.String(), 0, 0, err)
	if err != nil {
		if !d.closed {
			d.fail("Pause: %v", err)
		}
		return
	}
	if at := d.now(); at < until {
		d.log.Pauses = append(d.log.Pauses, Pause{At: at, Until: until})
	}
}

// setRate changes a domain's rate (every lane's, with lanes) to one of
// Config.Rates, from the instant SetRate returned (see pause).
func (d *driver) setRate() {
	s, ok := d.s.(RateSetter)
	if !ok || len(d.cfg.Rates) == 0 {
		return
	}
	d.log.Decision++
	dom, r := d.rng.IntN(d.cfg.Domains), d.cfg.Rates[d.rng.IntN(len(d.cfg.Rates))]
	err := s.SetRate(dom, r)
	d.note("set rate "+r.String(), dom, 0, err)
	if err != nil {
		if !d.closed {
			d.fail("SetRate: %v", err)
		}
		return
	}
	d.log.Rates = append(d.log.Rates, RateChange{At: d.now(), Dom: dom, Rate: r})
}

func (d *driver) close() {
	if d.closed {
		return
	}
	d.closed = true
	d.log.Closed = d.now()
	if err := d.s.Close(); err != nil {
		d.fail("Close: %v", err)
	}
	d.settle()
}

// checkStats compares the subject's Stats with the calls, between steps,
// exactly unless an owner is stalled or the subject closed.
func (d *driver) checkStats(step int) {
	if d.cfg.RealTime {
		return
	}
	got := d.s.Stats()
	d.mu.Lock()
	want := d.log.want(int(d.blocked.Load()))
	d.mu.Unlock()
	stalling := d.clock.Stalling()
	// A caller whose grant raced its cancellation has its answer, and
	// waits for the owner's acknowledgement, which a stalled owner has not
	// sent yet: it is not waiting for its answer, and is counted granted
	// before it returns. Nobody is in between otherwise.
	if got.Waiting != want.Waiting && (!stalling || got.Waiting > want.Waiting) {
		d.fail("step %d: Stats().Waiting = %d, %d Acquires blocked", step, got.Waiting, want.Waiting)
	}
	if !d.closed && !stalling && got != want {
		d.fail("step %d: Stats() = %+v, the calls add up to %+v", step, got, want)
	}
}

// note records an op for the dump.
func (d *driver) note(what string, seq int, arg int64, out any) {
	d.log.Ops = append(d.log.Ops, Op{At: d.now(), What: what, Seq: seq, Arg: arg, Out: out})
}
