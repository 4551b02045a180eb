package actor

// The owner keeps its waiters in one of two orders: a FIFO (scheduler.Queue)
// until the limiter's first lane, and the fair order of its lanes
// (scheduler.Fair, lanes.go) from then on. These helpers are the owner's
// only ways to the queue, so that every path (admission, grants,
// cancellation, expiry, tuning, Close) sees the same one; a limiter without
// lanes pays one predictable branch for them.

// queueLen returns the number of waiters.
func (r *runtime) queueLen() int {
	if r.lanes == nil {
		return r.q.Len()
	}
	return r.lanes.fair.Len()
}

// grantDue grants every waiter due by now and returns the next wake-up.
func (r *runtime) grantDue(now int64) int64 {
	if r.lanes == nil {
		return r.q.Grant(now, queueOwner{r})
	}
	return r.lanes.fair.Grant(now, queueOwner{r})
}

// catchUp brings the queue to the instant at before a request of that
// instant is served: it refuses the waiters whose wait ran out by then and
// grants those due by then, at their own instants, in that order (an
// expiry grants first what was due by its own instant). It returns the
// next wake-up, as grantDue.
func (r *runtime) catchUp(at int64) int64 {
	r.expiry.expire(at, r)
	return r.grantDue(at)
}

// due is the instant the head would next be considered (0: no waiters).
func (r *runtime) due(now int64) int64 {
	if r.lanes == nil {
		return r.q.Due(now)
	}
	return r.lanes.fair.Due(now)
}

// unqueue takes c out of the queue wherever it is, if it is there, at the
// instant at (a waiter it makes head became head then), and tells the
// predictions: nothing was consumed, but what they assumed of c no longer
// holds.
func (r *runtime) unqueue(c *call, at int64) bool {
	if r.lanes == nil {
		if !r.q.Remove(&c.node, at) {
			return false
		}
		r.pol.removed()
		return true
	}
	return r.lanes.remove(c, at)
}

// push queues c behind the waiters of its lane (or of the queue).
func (r *runtime) push(c *call) {
	if r.lanes == nil {
		r.q.Push(&c.node)
		return
	}
	r.lanes.fair.Push(&c.node, r.lanes.flowOf(c))
}

// hold grants nothing before until (Pause).
func (r *runtime) hold(until int64) {
	if r.lanes == nil {
		r.q.Hold(until)
		return
	}
	r.lanes.fair.Hold(until)
}

// retimed is told that the capacity changed (a new rate or burst, a pause,
// a settlement, a refund): the head is asked again and every prediction is
// forgotten.
func (r *runtime) retimed() {
	r.pol.removed()
	if r.lanes == nil {
		r.q.Retime()
		return
	}
	r.lanes.fair.Retime()
	r.lanes.forget()
}

// popAny removes and returns a waiter, or nil: for Close.
func (r *runtime) popAny() *call {
	if r.lanes == nil {
		if n := r.q.PopFront(); n != nil {
			return n.Value
		}
		return nil
	}
	if n, _ := r.lanes.fair.Pop(); n != nil {
		return n.Value
	}
	return nil
}
