package scheduler

import (
	"iter"
	"math/bits"
)

// FloorScale is the unit of Fair.SetFloor: a floor of FloorScale/10 keeps a
// tenth of the grants for the classes below a busy one.
const FloorScale = 1_000_000

// Fair is a queue of waiters in flows (lanes), each with a weight and a
// priority class, granted one at a time at scheduled instants like a
// Queue, but in the order of weighted fair queueing instead of arrival.
//
// Within a class, the flows with waiters share the grants in proportion to
// their weights, measured in cost: each flow has a virtual time, its head's
// finish tag is that time plus the head's cost over the flow's weight, and
// the head with the least finish tag is next (self-clocked fair queueing,
// Golestani 1994; ties go to the head that arrived first). A grant moves
// its flow's virtual time to that finish, and the class's virtual time to
// the latest finish granted. A flow that becomes busy starts at the class's
// virtual time: idle time is never banked, and a flow that was served
// before it went idle carries nothing over either. Over any span in which
// two flows i and j are both busy, their grants W differ from their
// weights' proportion by at most one largest cost of each:
//
//	|W_i/w_i - W_j/w_j| <= Cmax_i/w_i + Cmax_j/w_j
//
// Inside a flow the order is FIFO, and as in Queue only the chosen head is
// ever considered: a small waiter never passes a large one that the order
// put first, so no waiter starves.
//
// Classes are strict priorities above the weights: a class is served only
// while every class above it is empty, unless SetFloor gives the classes
// below a busy class a share of their own (see SetFloor). docs/fairness.md
// has the maths.
//
// Grant, Due, Hold, Retime, HeadFloor and Last mean what they mean for a
// Queue, with "the head" the waiter the fair order puts first. Push and
// Remove are O(log busy flows) when they change a flow's head, O(1)
// otherwise; a grant is O(log busy flows + Classes). A flow without
// waiters is in no structure here.
//
// The zero Fair is empty, strict, and ready. A Fair is owned by one
// goroutine and is not safe for concurrent use.
type Fair[T any] struct {
	class      [Classes]fairClass[T]
	busy       uint16 // bit k: class k has waiters
	n          int
	cost       int64 // of the n waiters
	seq        uint64
	wa, wb     int64 // a class's weight against the classes below it; wb 0: strict priority
	head       *Node[T]
	headFlow   *Flow[T]
	last       int64
	headRetry  int64
	headSince  int64
	sinceKnown bool
	hold       int64
}

// fairClass is one priority class: its busy flows by finish tag, its
// virtual time, and, when a floor is set, the level at which it competes
// with the classes below it (a for itself, b for them, lv the level's
// virtual time).
type fairClass[T any] struct {
	flows    flowHeap[T]
	v        tag
	n        int
	a, b, lv tag
}

// Len returns the number of waiters in every flow.
func (f *Fair[T]) Len() int { return f.n }

// Cost returns the sum of the costs of the waiters in every flow: what the
// queue needs granted before it is empty, in whatever order.
func (f *Fair[T]) Cost() int64 { return f.cost }

// Head returns the waiter the fair order puts first and its flow, or nils.
func (f *Fair[T]) Head() (*Node[T], *Flow[T]) { return f.head, f.headFlow }

// Push appends n to fl. It panics if n is already queued or fl was not
// initialised: bugs in the owner, not conditions of input.
func (f *Fair[T]) Push(n *Node[T], fl *Flow[T]) {
	if fl.weight == 0 {
		panic("scheduler: Fair.Push to a Flow that was not initialised")
	}
	if fl.Contains(n) {
		panic("scheduler: node pushed twice")
	}
	c := &f.class[fl.class]
	if fl.n == 0 {
		if c.n == 0 {
			f.wake(int(fl.class))
		}
		// An idle flow banks nothing: its last finish is never after the
		// class's virtual time, which is where it starts again.
		fl.start, fl.seq = c.v, f.seq
		f.seq++
		fl.link(n)
		c.flows.push(fl)
	} else {
		fl.link(n)
	}
	c.n++
	f.n++
	f.cost += n.Cost
	if fl.n == 1 {
		f.repick(n.Arrival, true) // a new head became head at this arrival
	}
}

// wake marks class k busy. Its level against the classes below starts
// afresh: what they were granted while k was idle is no debt of theirs,
// and k's idle time no credit. If nothing below k was busy, the lowest busy
// class above k now has something below it, which starts at that level's
// virtual time for the same reason.
func (f *Fair[T]) wake(k int) {
	c := &f.class[k]
	c.a, c.b = c.lv, c.lv
	if f.busy&(1<<k-1) == 0 {
		if above := f.busy >> (k + 1); above != 0 {
			u := &f.class[k+1+bits.TrailingZeros16(above)]
			u.b = maxTag(u.b, u.lv)
		}
	}
	f.busy |= 1 << k
}

// Remove takes n out of fl wherever it is, at the instant at, and reports
// whether it was there, as Queue.Remove. Nothing was consumed before a
// grant, so the flow's virtual time stays where it was: the waiters behind
// move up as if n had never queued.
func (f *Fair[T]) Remove(n *Node[T], fl *Flow[T], at int64) bool {
	if !fl.Contains(n) {
		return false
	}
	wasHead := fl.head == n
	f.unlink(n, fl)
	if wasHead {
		f.repick(at, true)
	}
	return true
}

// unlink takes n out of fl and keeps the flow's place in its class.
func (f *Fair[T]) unlink(n *Node[T], fl *Flow[T]) {
	wasHead := fl.head == n
	fl.unlink(n)
	c := &f.class[fl.class]
	c.n--
	f.n--
	f.cost -= n.Cost
	if wasHead {
		if fl.n == 0 {
			c.flows.remove(fl)
		} else {
			c.flows.fix(fl)
		}
	}
	if c.n == 0 {
		f.busy &^= 1 << fl.class
	}
	if f.n == 0 {
		f.restart()
	}
}

// Pop removes and returns the head and its flow, or nils.
func (f *Fair[T]) Pop() (*Node[T], *Flow[T]) {
	h, fl := f.head, f.headFlow
	if h != nil {
		f.unlink(h, fl)
		f.repick(0, false) // draining, as Queue.PopFront
	}
	return h, fl
}

// All yields every waiter with its flow, in no particular order. f must not
// change while it runs.
func (f *Fair[T]) All() iter.Seq2[*Node[T], *Flow[T]] {
	return func(yield func(*Node[T], *Flow[T]) bool) {
		for k := range f.class {
			for _, e := range f.class[k].flows {
				for n := e.flow.head; n != nil; n = n.next {
					if !yield(n, e.flow) {
						return
					}
				}
			}
		}
	}
}

// Grant grants, in the fair order, every head whose scheduled instant is
// not after now, asking o.Decide at that instant, as Queue.Grant does. It
// returns the instant the head will be due, or 0 when the queue is empty
// or the head waits for an event.
func (f *Fair[T]) Grant(now int64, o Owner[T]) (wake int64) {
	for h := f.head; h != nil; h = f.head {
		at := f.Due(now)
		if at > now {
			return at
		}
		ok, retry := o.Decide(at, h.Cost)
		if !ok {
			if retry == 0 {
				return 0 // waits for an event
			}
			f.headRetry = max(retry, at+1) // always later: the loop ends
			continue
		}
		fl := f.headFlow
		f.last = at
		f.charge(fl, h.Cost)
		f.unlink(h, fl)
		f.repick(at, true)
		f.headRetry = 0
		o.Granted(h, at)
	}
	return 0
}

// charge moves the virtual times on for a grant of cost to fl's head, which
// pick chose: its flow and class, and, with a floor, every level on the
// way up from fl's class. At fl's own level the class won against the
// classes below it (if any were busy); at every busy level above, the
// classes below won.
func (f *Fair[T]) charge(fl *Flow[T], cost int64) {
	k := int(fl.class)
	c := &f.class[k]
	if f.wb != 0 {
		if f.busy&(1<<k-1) != 0 {
			c.a = c.a.plus(span(cost, f.wa))
			c.lv = maxTag(c.lv, c.a)
		}
		for b := f.busy >> (k + 1); b != 0; b &= b - 1 {
			u := &f.class[k+1+bits.TrailingZeros16(b)]
			u.b = u.b.plus(span(cost, f.wb))
			u.lv = maxTag(u.lv, u.b)
			if u.lv.hi >= rebaseAt {
				u.rebaseLevel()
			}
		}
		if c.lv.hi >= rebaseAt {
			c.rebaseLevel()
		}
	}
	fl.start = c.flows[fl.pos-1].key.finish // its head's finish: start + cost/weight
	c.v = maxTag(c.v, fl.start)
	if c.v.hi >= rebaseAt {
		c.rebase()
	}
}

// pick returns the flow whose head the fair order puts first, or nil.
// Strict: the highest busy class's least finish. With a floor, from the
// lowest busy class up, each class's least finish competes at that
// class's level with the winner from below, weighted wa against wb; a tie
// goes to the class.
func (f *Fair[T]) pick() *Flow[T] {
	if f.busy == 0 {
		return nil
	}
	if f.wb == 0 {
		return f.class[bits.Len16(f.busy)-1].flows[0].flow
	}
	var best *Flow[T]
	for b := f.busy; b != 0; b &= b - 1 {
		c := &f.class[bits.TrailingZeros16(b)]
		top := c.flows[0].flow
		if best == nil || !c.b.plus(span(best.head.Cost, f.wb)).less(c.a.plus(span(top.head.Cost, f.wa))) {
			best = top
		}
	}
	return best
}

// repick finds the head again after a change made at the instant at
// (unknown when not known: a drain). A new head has not been asked yet, and
// became head then (see HeadFloor).
func (f *Fair[T]) repick(at int64, known bool) {
	fl := f.pick()
	var h *Node[T]
	if fl != nil {
		h = fl.head
	}
	f.headFlow = fl
	if h == f.head {
		return
	}
	f.head, f.headRetry = h, 0
	f.headSince, f.sinceKnown = at, known
}

// restart starts every virtual time again from zero once the queue is
// empty: every flow is idle then and starts at its class's time when it is
// next busy, so nothing is lost, and the tags stay far from their limit.
func (f *Fair[T]) restart() {
	for k := range f.class {
		c := &f.class[k]
		c.v, c.a, c.b, c.lv = tag{}, tag{}, tag{}, tag{}
		if cap(c.flows) > 64 {
			c.flows = nil // give back the heap of a burst of busy flows
		}
	}
}

// rebaseAt is where a class that never empties moves its tags down. At
// 2^62 of the high word a grant's span (at most 2^63 << 40 over weight 1,
// below 2^39 in the high word) cannot carry the tags past 2^64.
const rebaseAt = 1 << 62

// rebase subtracts the least busy flow's start from every tag of the class.
// A busy flow's start lags the class's virtual time by at most one span,
// since the flow with the least finish is granted next, so this frees
// nearly the whole range; it runs once per 2^126 units of tag, in practice
// never (tested through an internal hook).
func (c *fairClass[T]) rebase() {
	base := c.v
	for _, e := range c.flows {
		base = minTag(base, e.flow.start)
	}
	c.v = c.v.minus(base)
	for i := range c.flows {
		e := &c.flows[i]
		e.flow.start = e.flow.start.minus(base)
		e.key.finish = e.key.finish.minus(base)
	}
}

// rebaseLevel does for a class's level what rebase does for its flows.
func (c *fairClass[T]) rebaseLevel() {
	base := minTag(c.a, c.b)
	c.a, c.b, c.lv = c.a.minus(base), c.b.minus(base), c.lv.minus(base)
}

// SetFloor sets the share of the grants that the classes below a busy class
// keep while they have waiters, in units of FloorScale; 0, the default, is
// strict priority. At each busy class, that class and everything below it
// share what reaches them FloorScale-floor to floor, by the same fair
// queueing as the flows of a class: with classes 2, 1 and 0 busy and a
// floor of a tenth, class 2 has 90% of the grants, class 1 9% and class 0
// 1%; with only classes 2 and 0 busy, 90% and 10%. Every level starts
// afresh; a head it changes became head at at. It panics for a floor
// outside [0, FloorScale/2]: above a half, the classes below would come
// first.
func (f *Fair[T]) SetFloor(floor, at int64) {
	if floor < 0 || floor > FloorScale/2 {
		panic("scheduler: Fair.SetFloor out of range")
	}
	f.wa, f.wb = FloorScale-floor, floor
	if floor == 0 {
		f.wa = 0
	}
	for k := range f.class {
		c := &f.class[k]
		c.a, c.b = c.lv, c.lv
	}
	f.repick(at, true)
}

// Floor returns the floor SetFloor set.
func (f *Fair[T]) Floor() int64 { return f.wb }

// Due returns the instant at which the head would next be considered, or 0
// when the queue is empty. Unlike a Queue's, it bounds only the waiters
// queued now: a newcomer that the fair order puts first may be considered
// before it.
func (f *Fair[T]) Due(now int64) int64 {
	h := f.head
	if h == nil {
		return 0
	}
	return max(f.HeadFloor(now), Scheduled(f.last, h.Arrival), f.headRetry, f.hold)
}

// HeadFloor is Queue.HeadFloor for the fair order's head.
func (f *Fair[T]) HeadFloor(now int64) int64 {
	if !f.sinceKnown {
		return now
	}
	return f.headSince
}

// Hold is Queue.Hold: no grant before until.
func (f *Fair[T]) Hold(until int64) { f.hold = max(f.hold, until) }

// Held returns the instant before which nothing is granted (0: no hold).
func (f *Fair[T]) Held() int64 { return f.hold }

// Retime is Queue.Retime.
func (f *Fair[T]) Retime() { f.headRetry = 0 }

// Last returns the scheduled instant of the latest grant.
func (f *Fair[T]) Last() int64 { return f.last }

// Adopt moves every waiter of q, in order, into fl, which must be the only
// flow with waiters afterwards (f must be empty), with what q knew of its
// head and its latest grant: an owner that starts using lanes while its
// FIFO has waiters.
func (f *Fair[T]) Adopt(q *Queue[T], fl *Flow[T]) {
	if f.n != 0 {
		panic("scheduler: Fair.Adopt into a queue with waiters")
	}
	f.last, f.hold = max(f.last, q.last), max(f.hold, q.hold)
	retry, since, known := q.headRetry, q.headSince, q.sinceKnown
	for n := q.PopFront(); n != nil; n = q.PopFront() {
		f.Push(n, fl)
	}
	if f.head != nil {
		f.headRetry, f.headSince, f.sinceKnown = retry, since, known
	}
}
