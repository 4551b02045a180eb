package scheduler

// Node is one waiter's place in a Queue. Its zero value is ready to push;
// the owner keeps it (typically inside its own per-waiter struct) and
// passes it back to Remove on cancellation, which is O(1) wherever it is.
type Node[T any] struct {
	Value   T     // the owner's waiter
	Cost    int64 // what the waiter asks for
	Arrival int64 // when it arrived, ns on the owner's timeline

	prev, next *Node[T]
}

// Next returns the waiter behind n, or nil.
func (n *Node[T]) Next() *Node[T] { return n.next }

// Owner is what a Queue asks while granting.
type Owner[T any] interface {
	// Decide answers for cost at instant at, and takes the capacity when it
	// allows. When it denies, retryAt is the earliest instant the same cost
	// could be allowed if nothing else is admitted first, or 0 when only an
	// event (a release) can help and the owner will call Grant again then.
	Decide(at, cost int64) (allowed bool, retryAt int64)
	// Granted is told of each grant, in order, with its scheduled instant.
	Granted(n *Node[T], at int64)
}

// Queue is a strict FIFO of waiters. Only the head is ever considered:
// passing a smaller request behind a large one would raise throughput for a
// moment, but under load it starves large requests forever, and a limiter's
// callers cannot tell which of them is "large". The cost is head-of-line
// blocking, which the owner bounds with deadlines and queue limits.
//
// The zero Queue is empty and ready.
type Queue[T any] struct {
	head, tail *Node[T]
	n          int
	last       int64 // scheduled instant of the previous grant
	headRetry  int64 // the owner's last retryAt for the current head, or 0
	headSince  int64 // when the current head became head, if sinceKnown
	sinceKnown bool
	hold       int64 // no grant before this instant (Hold)
}

// Len returns the number of waiters.
func (q *Queue[T]) Len() int { return q.n }

// Head returns the first waiter, or nil.
func (q *Queue[T]) Head() *Node[T] { return q.head }

// Contains reports whether n is in q. A node belongs to one queue at a time
// (the owner's); the node keeps no pointer back to it, which would cost
// every waiter a word.
func (q *Queue[T]) Contains(n *Node[T]) bool { return n.prev != nil || q.head == n }

// Push appends n. It panics if n is already in q: that is a bug in the
// owner, not a condition of input.
func (q *Queue[T]) Push(n *Node[T]) {
	if q.Contains(n) {
		panic("scheduler: node pushed twice")
	}
	n.prev, n.next = q.tail, nil
	if q.tail == nil {
		q.head = n
		q.headRetry, q.headSince, q.sinceKnown = 0, n.Arrival, true
	} else {
		q.tail.next = n
	}
	q.tail = n
	q.n++
}

// Remove takes n out of the queue wherever it is, at the instant at (a
// cancellation's own reading, an expiry's instant), and reports whether it
// was there. The waiters behind move up; nothing they were promised
// changes, since nothing is consumed before a grant. A waiter that Remove
// makes head became head at at (HeadFloor).
func (q *Queue[T]) Remove(n *Node[T], at int64) bool {
	if !q.Contains(n) {
		return false
	}
	if q.unlink(n) {
		// The new head has not been asked yet.
		q.headRetry, q.headSince, q.sinceKnown = 0, at, true
	}
	return true
}

// PopFront removes and returns the head, or nil: for draining the queue
// (a Close, a move into a Fair). The instant the next head became head is
// not known then; HeadFloor reads it as the instant asked.
func (q *Queue[T]) PopFront() *Node[T] {
	h := q.head
	if h != nil {
		q.unlink(h)
		q.headRetry, q.sinceKnown = 0, false
	}
	return h
}

// unlink takes n, which is queued, out of the list and reports whether it
// was the head.
func (q *Queue[T]) unlink(n *Node[T]) (wasHead bool) {
	wasHead = n.prev == nil
	if wasHead {
		q.head = n.next
	} else {
		n.prev.next = n.next
	}
	if n.next == nil {
		q.tail = n.prev
	} else {
		n.next.prev = n.prev
	}
	n.prev, n.next = nil, nil
	q.n--
	return wasHead
}

// Scheduled returns the instant at which a cost arriving at arrival is next
// considered after a grant at prev: the later of the two.
func Scheduled(prev, arrival int64) int64 { return max(prev, arrival) }

// Grant grants, in order, every head whose scheduled instant is not after
// now, asking o.Decide at that scheduled instant. It returns the instant at
// which the head will be due (the owner arms one timer for it), or 0 when the
// queue is empty or the head waits for an event rather than a time.
//
// A head's scheduled instant is never before it became head. When a grant
// promotes the next waiter, that is the grant's own scheduled instant, so a
// late wake-up loses no rate. When a removal promotes it, that is the
// removal's instant (Remove's at, the cancellation's own reading): the
// waiters behind a large head that leaves are granted from the moment it
// left, paced by the owner, and not all at once for instants already past,
// which would be a burst beyond the owner's capacity.
func (q *Queue[T]) Grant(now int64, o Owner[T]) (wake int64) {
	for h := q.head; h != nil; h = q.head {
		at := q.Due(now)
		if at > now {
			return at
		}
		ok, retry := o.Decide(at, h.Cost)
		if !ok {
			if retry == 0 {
				return 0 // waits for an event
			}
			// A denial's retry instant is strictly later; guard against an
			// owner that says otherwise, so this loop always ends.
			q.headRetry = max(retry, at+1)
			continue
		}
		q.last = at
		q.Remove(h, at) // the next head became head at this grant
		o.Granted(h, at)
	}
	return 0
}

// Due returns the instant at which the head would next be considered (it
// may be denied then, and retry later), or 0 when the queue is empty. It is
// a lower bound on the grant of every waiter.
func (q *Queue[T]) Due(now int64) int64 {
	h := q.head
	if h == nil {
		return 0
	}
	return max(q.HeadFloor(now), Scheduled(q.last, h.Arrival), q.headRetry, q.hold)
}

// Hold makes Grant grant nothing before until: a pause that an upstream
// asked for. Waiters keep their order; a later hold extends an earlier one,
// an earlier one does not shorten it.
func (q *Queue[T]) Hold(until int64) { q.hold = max(q.hold, until) }

// Held returns the instant before which nothing is granted (0: no hold).
func (q *Queue[T]) Held() int64 { return q.hold }

// Retime forgets what the owner said about the head's next instant, so that
// Grant asks it again: the owner's capacity changed (a new rate, a refund).
func (q *Queue[T]) Retime() { q.headRetry = 0 }

// Predict returns when a cost arriving at arrival would be granted if it were
// pushed behind everything granted up to prev, asking decide (which, like
// Owner.Decide, takes the capacity when it allows; pass a copy of the state).
// It is the rule Grant applies, for owners that answer "when would I get
// in?" before queuing. ok is false when decide never allows.
func Predict(prev, arrival, cost int64, decide func(at, cost int64) (bool, int64)) (at int64, ok bool) {
	at = Scheduled(prev, arrival)
	for i := 0; i < 64; i++ {
		allowed, retry := decide(at, cost)
		if allowed {
			return at, true
		}
		if retry == 0 {
			return 0, false
		}
		at = max(retry, at+1)
	}
	return 0, false
}

// HeadFloor returns the earliest instant the current head may be granted at
// by reason of when it became head: its arrival, the grant or the removal
// that made it head, or now after a PopFront (which drains).
func (q *Queue[T]) HeadFloor(now int64) int64 {
	if !q.sinceKnown {
		return now
	}
	return q.headSince
}

// Last returns the scheduled instant of the latest grant.
func (q *Queue[T]) Last() int64 { return q.last }
