package owner

import "time"

// The inbox is how every request reaches the owner: a lock-free stack of
// calls, pushed with one CAS, which the owner takes whole with one swap and
// reverses into arrival order. One path for every arrival gives every
// arrival one order: an Acquire with a deadline, a plain one that joins a
// busy queue, a TryAcquire and a refund are handled in the order they were
// pushed. The owner wakes on a channel of capacity one; a call is linked
// through its own next field, so the inbox costs no memory of its own.
//
// Three orders of atomic operations keep it safe without a lock:
//
//   - A plug-in that has a fast path publishes that the owner is busy in
//     Wake, before the owner takes the inbox, and a fast-path caller reads
//     the inbox before that state: a caller that finds the inbox empty
//     because the owner took it also finds the owner busy, so the fast
//     path never passes a request the owner holds but has not yet decided.
//     One that finds a request in the inbox goes behind it.
//   - A caller wakes the owner only if it sleeps: an owner that is awake
//     looks at the inbox again before it parks. And an arrival that needs
//     no prompt answer does not wake an owner that sleeps with its timer
//     armed either: the plug-in knows it cannot be served before the
//     timer fires, when the owner takes the inbox anyway. The owner
//     publishes that it sleeps (and how) and then looks at the inbox
//     before it parks; the caller pushes and then reads how the owner
//     sleeps. One of them sees the other: the owner finds the call, or the
//     caller sees it asleep and wakes it. Under load the owner is mostly
//     awake, so most callers touch no channel at all.
//   - Stop sets closed and then wakes the owner, which reads closed when
//     it wakes and, if set, answers everything it holds and takes the inbox
//     one last time. A caller that reads closed false after its push knows
//     that last take comes after it, so it will be answered; one that reads
//     it true also watches Done.
//
// Cancellations travel on a second stack, linked through cancelNext, since
// a call may still be in the inbox when its caller gives up. The owner takes
// the cancellations first and the inbox second: a cancellation it takes was
// pushed after its request, which is then in the inbox it takes next or was
// taken before, so a request is always handled before its own cancellation
// (loop.go, batch).

// Values of Owner.sleep.
const (
	awake       int32 = iota
	asleep            // parked until a wake-up
	asleepTimed       // parked until a wake-up or the timer
)

// Send pushes c onto the inbox and wakes the owner unless it may sleep on:
// prompt says the caller needs its answer before the owner's timer fires.
func (o *Owner[C]) Send(c *Call[C], prompt bool) {
	if c.Units != 0 {
		// Before the push: the count may run ahead of the inbox, never
		// behind it, so a prediction from it errs long, never short.
		o.queued.Add(c.Units)
	}
	for {
		top := o.inbox.Load()
		c.next = top
		if o.inbox.CompareAndSwap(top, c) {
			break
		}
	}
	if s := o.sleep.Load(); s == asleep || s == asleepTimed && prompt {
		o.kick()
	}
}

// sendCancel tells the owner that c's caller gave up, and when.
func (o *Owner[C]) sendCancel(c *Call[C]) {
	c.CancelAt = o.stamp()
	for {
		top := o.cancels.Load()
		c.cancelNext = top
		if o.cancels.CompareAndSwap(top, c) {
			break
		}
	}
	o.wakeIfAsleep()
}

// Poke tells the owner that something it decides on changed outside the
// inbox (units came back to a pool, keys were made), and wakes it if it
// sleeps. The owner clears the flag before it decides and reads it before
// it parks, so a change it decided without is never slept on.
func (o *Owner[C]) Poke() {
	o.poked.Store(true)
	o.wakeIfAsleep()
}

// wakeIfAsleep wakes the owner if it sleeps, after something was pushed.
func (o *Owner[C]) wakeIfAsleep() {
	if o.sleep.Load() != awake {
		o.kick()
	}
}

// kick wakes the owner; a token already waiting is enough.
func (o *Owner[C]) kick() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Pending reports whether there is anything for the owner to take or look
// at: a plug-in doing long work (a sweep) yields to it.
func (o *Owner[C]) Pending() bool {
	return o.inbox.Load() != nil || o.cancels.Load() != nil || o.poked.Load()
}

// park sleeps until a wake-up or the timer (timerC, nil when unarmed).
func (o *Owner[C]) park(timerC <-chan time.Time) {
	s := asleep
	if o.armed {
		s = asleepTimed
	}
	if h := o.hook.Load(); h != nil {
		(*h)()
	}
	o.sleep.Store(s)
	if o.Pending() { // pushed (or poked) before the store: its caller may not wake us
		o.sleep.Store(awake)
		return
	}
	if timerC == nil {
		<-o.wake // a plain receive: cheaper than a select
	} else {
		select {
		case <-o.wake:
		case <-timerC:
			o.armed = false
		}
	}
	o.sleep.Store(awake)
}

// unpoke clears the poke flag before the owner decides, and reports
// whether it was set.
func (o *Owner[C]) unpoke() bool {
	if !o.poked.Load() {
		return false // most wake-ups: no write to a line callers read
	}
	o.poked.Store(false)
	return true
}

// take returns the cancellations and the requests pushed so far, each
// oldest first.
func (o *Owner[C]) take() (cancels, arrivals *Call[C]) {
	for c := o.cancels.Swap(nil); c != nil; {
		next := c.cancelNext
		c.cancelNext = cancels
		cancels, c = c, next
	}
	var units int64
	for c := o.inbox.Swap(nil); c != nil; {
		next := c.next
		c.next = arrivals
		arrivals, c = c, next
		units += arrivals.Units
	}
	if units != 0 {
		o.queued.Add(-units)
	}
	return cancels, arrivals
}

// Queued is the Units of the requests in the inbox that the owner has not
// taken yet: a request that does not wake an owner asleep on its timer
// stays there until the timer fires, unseen by the owner's own
// predictions. It may count a request a moment before the request can be
// taken, never after.
func (o *Owner[C]) Queued() int64 { return o.queued.Load() }

// Empty reports whether the inbox holds no request. A fast-path caller
// reads it before the plug-in's busy state (see above).
func (o *Owner[C]) Empty() bool { return o.inbox.Load() == nil }
