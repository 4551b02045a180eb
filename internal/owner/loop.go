package owner

import "time"

// Plugin is what an owner owns: the decisions, in ns on its timeline. The
// core calls it from the owner goroutine only, in the order of one
// wake-up (run), so none of its state needs a lock.
type Plugin[C any] interface {
	// Wake opens a wake-up and returns its one clock reading. A plug-in
	// with a fast path closes it here, before the reading and before the
	// inbox is taken (inbox.go). poked says Poke was called since the
	// last wake-up.
	Wake(poked bool) (now int64)
	// Cancel is told that c's caller gave up at at (its own reading, no
	// later than now): remove c wherever it waits and answer it Canceled,
	// or, if it was answered already, acknowledge with Signal. A request
	// whose cancellation came in its own batch is handled first, in its
	// order, and its cancellation right after it.
	Cancel(c *Call[C], at, now int64)
	// Handle decides one request, in arrival order.
	Handle(c *Call[C], now int64)
	// Schedule ends a wake-up: it grants what fell due by now, expires
	// what can no longer be served in time and publishes what the
	// lock-free paths may do. It returns the instant the owner must wake
	// at (0: none) and the fresh reading the timer is armed from. A wake
	// at or before that reading (something fell due while the wake-up
	// ran: a slow pass, an owner descheduled) is not served by Schedule
	// itself: the core starts a new wake-up at once, so that what came
	// meanwhile is served in the order of run, cancellations first.
	Schedule(now int64) (wake, at int64)
	// Shutdown answers every waiter, and each request of left (linked by
	// Next, oldest first), with Closed: the owner is exiting.
	Shutdown(left *Call[C])
}

// run is the owner goroutine. One wake-up, in this order:
//
//	(a) cancellations of the batch first, each at its caller's own reading
//	    (Cancel): an arrival is judged against what is left once the
//	    waiters that gave up are gone, not behind them; a refund or a
//	    settlement is a request of the batch, handled in its order;
//	(b, c) arrivals in arrival order (Handle); the plug-in grants heads
//	    that fell due by an arrival's own stamp before judging it; one
//	    whose cancellation came with it is cancelled right after it;
//	(d, e) Schedule: due heads at their due instants, expiry, publish;
//	(f) the one timer, armed from Schedule's fresh reading; or, when
//	    something fell due by that reading, a new wake-up at once.
//
// The fast path is closed in Wake, before the clock is read, so no
// fast-path caller slips in between the reading and the decisions. A
// head that fell due while the wake-up ran is granted by the next one,
// after the cancellations that came meanwhile: a caller that gave up
// before its head's due instant is not granted (it was, when Schedule
// granted it from its fresh reading; its caller got a grant it had given
// up on, and a later caller was judged as if it came after it).
func (o *Owner[C]) run(p Plugin[C]) {
	defer close(o.done)
	var timerC <-chan time.Time
	again := false
	for {
		if !again && !o.Pending() {
			o.park(timerC)
		}
		o.wakes.Add(1)
		poked := o.unpoke() // before deciding: a later poke is seen at the next park
		if o.closed.Load() {
			o.shutdown(p)
			return
		}
		now := p.Wake(poked)
		cancels, arrivals := o.take()
		o.batch(p, cancels, arrivals, now)
		wake, at := p.Schedule(now)
		if again = wake != 0 && wake <= at; !again {
			timerC = o.arm(wake, at)
		}
	}
}

// batch serves what one take found, cancellations first (run, (a)). A
// cancellation of a request in this very batch (its caller gave up before
// the owner saw it) cannot be handled before its request: the request is
// marked, handled in its order (it may have been due before its caller
// gave up: a late owner must not withdraw what it would have granted), and
// its cancellation handled right after it, at its caller's reading.
func (o *Owner[C]) batch(p Plugin[C], cancels, arrivals *Call[C], now int64) {
	if cancels != nil { // most batches have none: no pass over the arrivals then
		for c := arrivals; c != nil; c = c.next {
			c.inBatch = true
		}
	}
	for c := cancels; c != nil; {
		next := c.cancelNext // read first: once answered, c is its caller's
		if c.inBatch {
			c.cancelled = true
		} else {
			p.Cancel(c, cancelAt(c, now), now)
		}
		c = next
	}
	for c := arrivals; c != nil; {
		next, cancelled := c.next, c.cancelled
		c.inBatch, c.cancelled = false, false
		p.Handle(c, now)
		if cancelled {
			// Its caller waits for this acknowledgement before it reuses
			// c, even if Handle answered it.
			p.Cancel(c, cancelAt(c, now), now)
		}
		c = next
	}
}

// cancelAt is the instant c's caller gave up, within the timeline and no
// later than the owner's reading.
func cancelAt[C any](c *Call[C], now int64) int64 { return min(max(c.CancelAt, 0), now) }

// arm keeps the one timer armed for wake (0: none), from now, and returns
// the channel to wait on (nil when unarmed).
func (o *Owner[C]) arm(wake, now int64) <-chan time.Time {
	switch {
	case wake == 0:
		if o.armed {
			o.timer.Stop()
			o.armed = false
		}
		return nil
	case o.armed && wake == o.armedAt:
	case o.timer == nil:
		o.timer = o.newTimer(time.Duration(wake - now))
	default:
		o.timer.Reset(time.Duration(wake - now))
	}
	o.armed, o.armedAt = true, wake
	return o.timer.C()
}

// shutdown stops the timer, has the plug-in answer everything it holds and
// every request still in the inbox with Closed, and then acknowledges the
// cancellations, so that no caller waits on an owner that is gone. A
// cancellation is acknowledged after the answer of its request, which
// Shutdown sent.
func (o *Owner[C]) shutdown(p Plugin[C]) {
	if o.timer != nil {
		o.timer.Stop()
	}
	o.armed = false
	cancels, arrivals := o.take()
	p.Shutdown(arrivals)
	for c := cancels; c != nil; {
		next := c.cancelNext
		c.Signal()
		c = next
	}
}
