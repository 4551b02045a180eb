package actor

import (
	"context"
	"time"
)

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
//   - The owner publishes stBusy before it takes the inbox, and a fast-path
//     caller reads the inbox before the state: a caller that finds the
//     inbox empty because the owner took it also finds the owner busy, so
//     the fast path never passes a request the owner holds but has not yet
//     decided. One that finds a request in the inbox goes behind it.
//   - A caller wakes the owner only if it sleeps: an owner that is awake
//     looks at the inbox again before it parks. And an arrival that needs
//     no prompt answer (no deadline, no WithMaxWait or WithMaxQueue) does
//     not wake an owner that sleeps with its timer armed either: it cannot
//     be granted before the head, and the owner takes the inbox when the
//     timer fires. (Once a limiter has lanes every arrival is prompt: a
//     newcomer in another lane may go before the head.) The owner
//     publishes that it sleeps (and how) and then looks at the inbox
//     before it parks; the caller pushes and then reads
//     how the owner sleeps. One of them sees the other: the owner finds the
//     call, or the caller sees it asleep and wakes it. Under load the owner
//     is mostly awake, so most callers touch no channel at all.
//   - Close sets closed and then wakes the owner, which reads closed when it
//     wakes and, if set, answers everything it holds and takes the inbox one
//     last time. A caller that reads closed false after its push knows that
//     last take comes after it, so it will be answered; one that reads it
//     true also watches done.
//
// Cancellations travel on a second stack, linked through cancelNext, since
// a call may still be in the inbox when its caller gives up. The owner takes
// the cancellations first and the inbox second, and handles the inbox
// first: a cancellation it takes was pushed after its request, which is then
// in the inbox it takes next or was taken before, so a request is always
// handled before its own cancellation.

// send pushes c onto the inbox and wakes the owner unless it may sleep on:
// prompt says the caller needs its answer before the head's next grant.
func (r *runtime) send(c *call, prompt bool) {
	for {
		top := r.inbox.Load()
		c.next = top
		if r.inbox.CompareAndSwap(top, c) {
			break
		}
	}
	if s := r.sleep.Load(); s == asleep || s == asleepTimed && prompt {
		r.kick()
	}
}

// sendCancel tells the owner that c's caller gave up, and when.
func (r *runtime) sendCancel(c *call) {
	c.cancelAt = r.stamp()
	for {
		top := r.cancels.Load()
		c.cancelNext = top
		if r.cancels.CompareAndSwap(top, c) {
			break
		}
	}
	r.wakeIfAsleep()
}

// poke tells the owner that something it decided on changed outside the
// inbox (units came back to a pool), and wakes it if it sleeps. The owner
// clears the flag before it decides and reads it before it parks, so a
// change it decided without is never slept on.
func (r *runtime) poke() {
	r.poked.Store(true)
	r.wakeIfAsleep()
}

// wakeIfAsleep wakes the owner if it sleeps, after something was pushed.
func (r *runtime) wakeIfAsleep() {
	if r.sleep.Load() != awake {
		r.kick()
	}
}

// kick wakes the owner; a token already waiting is enough.
func (r *runtime) kick() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// pending reports whether there is anything for the owner to take or look at.
func (r *runtime) pending() bool {
	return r.inbox.Load() != nil || r.cancels.Load() != nil || r.poked.Load()
}

// Values of runtime.sleep.
const (
	awake       int32 = iota
	asleep            // parked until a wake-up
	asleepTimed       // parked until a wake-up or the timer
)

// park sleeps until a wake-up or the timer (timerC, nil when unarmed).
func (r *runtime) park(timerC <-chan time.Time) {
	s := asleep
	if r.armed {
		s = asleepTimed
	}
	if h := r.hookPk.Load(); h != nil {
		(*h)(r.queueLen())
	}
	r.sleep.Store(s)
	if r.pending() { // pushed (or poked) before the store: its caller may not wake us
		r.sleep.Store(awake)
		return
	}
	if timerC == nil {
		<-r.wake // a plain receive: cheaper than a select
	} else {
		select {
		case <-r.wake:
		case <-timerC:
			r.armed = false
		}
	}
	r.sleep.Store(awake)
}

// take returns the cancellations and the requests pushed so far, each
// oldest first.
func (r *runtime) take() (cancels, arrivals *call) {
	top := r.cancels.Swap(nil)
	for c := top; c != nil; {
		next := c.cancelNext
		c.cancelNext = cancels
		cancels, c = c, next
	}
	top = r.inbox.Swap(nil)
	for c := top; c != nil; {
		next := c.next
		c.next = arrivals
		arrivals, c = c, next
	}
	return cancels, arrivals
}

// roundTrip sends c and waits for its answer, cancelling it if ctx ends
// first. Cancellation is a message too: the caller waits for the owner's
// acknowledgement, after which the owner will never touch the call again,
// and only then returns the call to the pool.
//
// The wait selects only on the caller's own channels: no select touches a
// channel every caller shares, whose lock would serialise them. What makes
// that safe is the order Close keeps (see above).
func (r *runtime) roundTrip(ctx context.Context, c *call, prompt bool) result {
	if c.op == opAcquire {
		// Counted by the caller, from before its request can be seen to
		// the moment it returns: exact whenever nobody is in between.
		r.waiting.Add(1)
		defer r.waiting.Add(-1)
	}
	r.send(c, prompt)
	var done <-chan struct{} // nil: the answer is sure to come
	if r.closed.Load() {
		done = r.done
	}
	ctxDone := ctx.Done()
	if ctxDone == nil && done == nil {
		<-c.reply // nothing can interrupt: a plain receive, no select
		return r.finish(c)
	}
	select {
	case <-c.reply:
		return r.finish(c)
	case <-ctxDone:
	case <-done:
		return r.poll(c)
	}
	r.sendCancel(c)
	if r.closed.Load() {
		done = r.done
	}
	select {
	case <-c.reply:
	case <-done:
		return r.poll(c)
	}
	if c.status != stCanceled {
		// The answer raced the cancellation and won; its acknowledgement
		// follows.
		select {
		case <-c.reply:
		case <-done:
			return c.result()
		}
	}
	return r.finish(c)
}

func (r *runtime) finish(c *call) result {
	res := c.result()
	r.calls.Put(c)
	return res
}

// poll is for a caller that saw the owner exit: an answer may be in its
// channel. The call is not reused, since the inbox may still hold it.
func (r *runtime) poll(c *call) result {
	select {
	case <-c.reply:
		return c.result()
	default:
		return result{status: stClosed}
	}
}

// newCallFor takes a call from the pool and fills in the request.
func (r *runtime) newCallFor(ctx context.Context, o op, cost, at int64, wantRc bool) *call {
	c := r.calls.Get().(*call)
	c.status, c.op, c.wantRc, c.wantQuota = 0, o, wantRc, false // a pooled call keeps its last answer
	c.lane, c.probe = nil, false
	c.node.Cost, c.arrival = cost, at
	c.hasDL = false
	if dl, ok := ctx.Deadline(); ok {
		c.hasDL, c.deadline = true, int64(dl.Sub(r.epoch))
	}
	return c
}
