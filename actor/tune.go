package actor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/internal/quota"
	"github.com/sluicehq/sluice/permits"
)

// Limits that listen to the API (issue 13): a rate that changes while
// waiters wait, a pause an upstream asks for, and costs settled with what a
// call really used. Each is a round trip to the owner, which applies it in
// order with every other request.

// ErrNotTunable is matched by the error of SetRate or SetBurst on a limiter
// whose algorithm cannot change (it does not implement
// algorithms.Tunable), and of SetBurst on a window, which has no burst.
var ErrNotTunable = errors.New("sluice: the algorithm cannot change its rate or burst")

// SetRate changes the limiter's rate at once, keeping its burst. Queued
// waiters are re-timed at once, in order; nothing already granted is taken
// back (the units still owed are paid at the new rate); the lock-free paths
// see the new rate atomically. It fails, changing nothing, with an error
// matching permits.ErrInvalidConfig for an invalid rate, ErrNotTunable
// when the algorithm cannot change, and permits.ErrClosed once closed.
func (l *Limiter) SetRate(rate algorithms.Rate) error { return l.tune(rate, 0) }

// SetBurst changes the burst (the capacity of a bucket) at once, keeping the
// rate; see SetRate. A waiter whose cost no longer fits fails with an error
// matching permits.ErrCostExceedsCapacity. Windows have no burst: it fails
// with ErrNotTunable.
func (l *Limiter) SetBurst(burst int64) error {
	if !l.rate.hasBurst() {
		// A window refuses every burst alike, whatever its value: the
		// owner asks it for one it could hold, and it says it has none.
		return l.tune(algorithms.Rate{}, 1)
	}
	if burst < 1 {
		return configerr.Errorf("actor", "burst must be positive, got %d", burst)
	}
	return l.tune(algorithms.Rate{}, burst)
}

func (l *Limiter) tune(rate algorithms.Rate, burst int64) error {
	if _, ok := l.rate.alg.(algorithms.Tunable); !ok {
		return fmt.Errorf("%w: %T", ErrNotTunable, l.rate.alg)
	}
	if l.rt.o.Closed() {
		return permits.ErrClosed
	}
	c := l.rt.newCallFor(context.Background(), opTune, 0, l.rt.stamp(), false)
	x := c.ext()
	x.rate, x.burst, x.err = rate, burst, nil
	res := l.rt.roundTrip(context.Background(), c, true)
	if res.status == stClosed {
		return permits.ErrClosed
	}
	if res.err == nil {
		l.logTuned(rate, burst)
	}
	return res.err
}

// Pause makes the limiter grant nothing before until: the upstream answered
// 429 with a Retry-After, and the whole queue should back off, not only the
// caller that saw it. Waiters keep their order and are granted from until
// on; a later Pause extends an earlier one, an earlier one does not shorten
// it; TryAcquire and Allow refuse meanwhile, with a RetryAfter that
// includes the pause. An instant already past changes nothing. It returns
// once the owner has applied it, or permits.ErrClosed.
func (l *Limiter) Pause(until time.Time) error {
	if l.rt.o.Closed() {
		return permits.ErrClosed
	}
	c := l.rt.newCallFor(context.Background(), opPause, 0, l.rt.stamp(), false)
	c.ext().until = int64(until.Sub(l.rt.epoch))
	if l.rt.roundTrip(context.Background(), c, true).status == stClosed {
		return permits.ErrClosed
	}
	return nil
}

// Settle settles a grant with the cost the call really used: less than
// granted gives the difference back, as far as the refund rule allows (see
// Refund); more is charged as a debt that later grants wait for, so that
// the limiter's bound holds over what was used. Settle a grant once; a
// grant from another limiter fails with permits.ErrUnknownGrant and
// changes nothing, and so does one settled or refunded before, while the
// algorithm still remembers it: at least until the slot it was granted
// has passed (the windows: while its window lasts, after which a repeat
// changes nothing anyway); a GCRA or bucket charges a later repeat again. It fails with
// permits.ErrInvalidCost for actual < 0, and permits.ErrClosed once closed.
// Grants come from AcquireGrant and TryAcquireGrant; for the permit of
// permits.All, use permits.Settle.
func (l *Limiter) Settle(g permits.Grant, actual int64) error {
	if actual < 0 {
		return permits.InvalidCost(actual)
	}
	mark, frac, seq, ok := g.Ticket(l)
	if !ok || g.Cost() < 1 {
		return permits.ErrUnknownGrant
	}
	if _, ok := l.rate.alg.(algorithms.Settler); !ok {
		return fmt.Errorf("%w: %T cannot settle", permits.ErrUnknownGrant, l.rate.alg)
	}
	if l.rt.o.Closed() {
		return permits.ErrClosed
	}
	c := l.rt.newCallFor(context.Background(), opSettle, g.Cost(), l.rt.stamp(), false)
	x := c.ext()
	x.rc = algorithms.Receipt{At: g.At, Cost: g.Cost(), Mark: mark, Frac: frac, Seq: seq}
	x.actual = actual
	switch l.rt.roundTrip(context.Background(), c, true).status {
	case stGranted:
		return nil
	case stClosed:
		return permits.ErrClosed
	}
	return permits.ErrUnknownGrant
}

var _ permits.Settler = (*Limiter)(nil)

// control applies a tuning request on the owner: a new rate or burst, a
// pause, a settlement. Each changes what the queue may be granted (see
// changing); the loop's schedule then grants what is due and re-arms the
// timer.
func (r *runtime) control(c *call, _ int64) {
	x := c.extra
	s := stGranted
	now := r.changing()
	switch c.op {
	case opTune:
		x.err = r.pol.(tuner).tune(now, x.rate, x.burst)
		if x.err == nil {
			r.failTooLarge(now)
		}
	case opPause:
		r.logPause(now, x.until)
		if x.until > now {
			r.hold(x.until)
			r.paused = max(r.paused, x.until)
		}
	case opSettle:
		if !r.pol.(tuner).settle(now, x.rc, x.actual) {
			s = stRefused
		}
	}
	r.changed(now)
	r.reply(c, s, 0)
}

// changing and changed frame a change of what the queue may be granted (a
// refund, a new rate or burst, a pause, a settlement). changing closes the
// algorithm's gate and then reads the clock afresh, not the batch's
// reading: a lock-free decision that started before the owner published
// busy may decide after any instant the owner has read, and a refund must
// come after every instant decided (the refund rule). Closing first makes
// the order total: a decision whose CAS landed before the close read the
// clock before the owner does, and one that comes after finds the gate
// closed and goes to the owner, behind the change. (Reading first left a
// window in which a caller decided at a later instant than the refund's,
// which then gave back room that caller had taken: three grants in a
// half-second against a bound of two.) schedule reopens the gate when
// nobody waits. changing then grants what was due by its reading, as it
// was due; changed re-times the head from that instant and never before it
// (what the change frees was not there earlier), and forgets the
// predictions.
func (r *runtime) changing() int64 {
	if g, ok := r.pol.(gateCloser); ok {
		g.closeGate()
	}
	at := r.now()
	r.catchUp(at)
	return at
}

// gateCloser is a policy whose lock-free path has a gate the owner can
// close (ratePolicy over an algorithms.Gated).
type gateCloser interface{ closeGate() }

func (r *runtime) changed(at int64) {
	r.hold(at)
	r.retimed()
}

// failTooLarge fails the waiters whose cost no longer fits the capacity,
// at the instant at of the change.
func (r *runtime) failTooLarge(at int64) {
	capacity := r.pol.(tuner).capacity()
	if r.lanes != nil {
		var fail []*call
		for n := range r.lanes.fair.All() {
			if n.Cost > capacity {
				fail = append(fail, n.Value)
			}
		}
		for _, c := range fail {
			r.unqueue(c, at)
			r.reply(c, stTooLarge, capacity)
		}
		return
	}
	for n := r.q.Head(); n != nil; {
		next := n.Next()
		if n.Cost > capacity {
			r.q.Remove(n, at)
			r.reply(n.Value, stTooLarge, capacity)
		}
		n = next
	}
}

// tuner is a policy whose configuration can change (the rate policy).
type tuner interface {
	tune(now int64, rate algorithms.Rate, burst int64) error
	settle(now int64, rc algorithms.Receipt, actual int64) bool
	capacity() int64
}

func (p *ratePolicy) tune(now int64, rate algorithms.Rate, burst int64) error {
	t := p.alg.(algorithms.Tunable)
	var err error
	if burst > 0 {
		err = t.SetBurstAt(p.t(now), burst)
	} else {
		err = t.SetRateAt(p.t(now), rate)
	}
	if err != nil {
		if burst > 0 && errors.Is(err, permits.ErrInvalidConfig) && !p.hasBurst() {
			return fmt.Errorf("%w: %v", ErrNotTunable, err)
		}
		return err
	}
	p.cap.Store(p.alg.Capacity())
	p.win.Store(int64(quota.Window(p.alg)))
	return nil
}

// hasBurst reports whether the algorithm has a burst to change: the windows
// have a limit instead.
func (p *ratePolicy) hasBurst() bool {
	switch p.alg.(type) {
	case *algorithms.SlidingWindow, *algorithms.FixedWindow:
		return false
	}
	return true
}

func (p *ratePolicy) settle(now int64, rc algorithms.Receipt, actual int64) bool {
	s, ok := p.alg.(algorithms.Settler)
	return ok && s.SettleAt(p.t(now), rc, actual)
}

func (p *ratePolicy) capacity() int64 { return p.cap.Load() }
