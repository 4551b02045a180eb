package actor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/scheduler"
)

// runtime is the owner of one limiter: one goroutine that takes requests
// from a mailbox in batches, keeps the FIFO of waiters, arms one timer for
// the head, and answers each caller on its own reply channel. Everything
// below the mailbox is touched by that goroutine only, so none of it needs a
// lock. What it owns (a rate, a pool) plugs in as a policy.
type runtime struct {
	cfg     config
	pol     policy
	epoch   time.Time // instants are ns since it on the owner's clock
	mailbox chan request
	done    chan struct{} // closed when the loop has exited
	once    sync.Once
	closed  atomic.Bool
	calls   sync.Pool

	granted, rejected, canceled counter
	waiting                     atomic.Int64

	// late holds Acquires that joined without waking the owner: newest
	// first, linked through their node's Value (see deferAcquire). busy
	// says the owner has waiters and its timer armed, so it will wake and
	// take them before it grants anything they could be granted.
	late  atomic.Pointer[call]
	lateN atomic.Int64 // calls in late, for Stats
	busy  atomic.Bool

	// owned by the loop
	q     scheduler.Queue[*call]
	timer Timer
	armed int64 // instant the timer is armed for, or 0
}

// policy is what an owner owns: the decisions, in ns on its timeline.
type policy interface {
	// admit decides for a request that found the queue empty. On a denial
	// that waiting can cure, retry is the predicted grant instant (0 when
	// only an event can help); a waiting request may close fast paths.
	admit(now, cost int64, wait bool) (ok bool, retry int64)
	// decide is scheduler.Owner.Decide.
	decide(at, cost int64) (ok bool, retry int64)
	// predict returns when cost arriving at now would be granted behind
	// everything queued; known is false when it cannot tell (or need is
	// false and telling would cost more than O(1)).
	predict(q *scheduler.Queue[*call], now, cost int64, need bool) (at int64, known bool)
	// queued is told that the request last predicted was queued at at;
	// dropped that it was not.
	queued(at, cost int64)
	dropped()
	// removed is told of a cancellation; idle that the queue is empty.
	removed()
	idle()
}

type op uint8

const (
	opAcquire op = iota
	opTry
	opCancel
	opRelease
	opClose
	opRefund // a rate grant given back unused (refund.go); answered
	opKick   // nothing: wakes the owner to take late Acquires
)

type request struct {
	op          op
	hasDeadline bool
	cost        int64
	deadline    int64
	at          int64 // opRefund: the grant's instant on the timeline
	c           *call
}

type status uint8

const (
	stGranted  status = iota + 1
	stLimited         // refused; retry holds RetryAfter
	stDeadline        // refused because the deadline is before the grant
	stClosed
	stCanceled
)

// call is one caller's round trip: its reply channel and its place in the
// queue. Calls are pooled, so an Acquire allocates nothing. The owner writes
// the result fields before it signals reply; the caller reads them after.
//
// Every waiter holds one while it waits, so its size is the heap a waiter
// costs beside its reply channel: 64 bytes, with the small fields together
// at the end and one word for the result's instant or duration.
type call struct {
	reply  chan struct{} // capacity 2: the answer, and a cancellation's acknowledgement
	node   scheduler.Node[*call]
	n      int64 // stGranted: the instant granted at; stLimited, stDeadline: RetryAfter in ns
	status status
	waited bool // stGranted: granted from the queue, not on arrival
}

// result reads what the owner wrote into c.
func (c *call) result() result {
	res := result{status: c.status, waited: c.waited}
	if c.status == stGranted {
		res.at = c.n
	} else {
		res.retry = time.Duration(c.n)
	}
	return res
}

// newCall makes a call for a runtime's pool. Each runtime has its own pool:
// a channel made inside a testing/synctest bubble must not be used outside
// it, and a limiter lives in one bubble.
func newCall() any {
	c := &call{reply: make(chan struct{}, 2)}
	c.node.Value = c
	return c
}

// result is what a round trip tells its caller.
type result struct {
	status status
	retry  time.Duration
	at     int64 // stGranted: the grant's instant on the owner's timeline
	waited bool  // stGranted: the request waited in the queue
}

func newRuntime(cfg config, pol policy) *runtime {
	r := &runtime{
		cfg:     cfg,
		pol:     pol,
		epoch:   cfg.clock.Now(),
		mailbox: make(chan request, cfg.mailbox),
		done:    make(chan struct{}),
	}
	r.calls.New = newCall
	go r.loop()
	return r
}

// now reads the owner's clock as ns on its timeline.
func (r *runtime) now() int64 { return int64(r.cfg.clock.Now().Sub(r.epoch)) }

func (r *runtime) close() {
	r.once.Do(func() {
		r.closed.Store(true)
		r.post(request{op: opClose}) // after every request posted before closed was set
	})
	<-r.done
}

// roundTrip sends one request and waits for its answer, cancelling it if ctx
// ends first. Cancellation is a message too: the caller waits for the
// owner's acknowledgement, after which the owner will never touch the call
// again, and only then returns the call to the pool.
//
// Sends are plain channel sends and the wait selects only on the caller's
// own channels: no select touches a channel every caller shares, whose lock
// would serialise them. What makes that safe is the order Close keeps: it
// sets closed and only then posts its close message. A caller that finds
// closed still false after its send knows its request is ahead of the close
// message in the mailbox, so it will be answered; one that finds it true
// also watches done.
func (r *runtime) roundTrip(ctx context.Context, o op, cost int64) result {
	c := r.calls.Get().(*call)
	c.status = 0 // no answer yet: a pooled call keeps its last one
	req := request{op: o, cost: cost, c: c}
	if dl, ok := ctx.Deadline(); ok {
		req.hasDeadline, req.deadline = true, int64(dl.Sub(r.epoch))
	}
	if o == opAcquire && !req.hasDeadline && r.cfg.maxWait < 0 && r.cfg.maxQueue <= 0 && r.busy.Load() {
		r.deferAcquire(c, cost)
	} else if !r.post(req) {
		r.calls.Put(c)
		return result{status: stClosed}
	}
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
		return poll(c)
	}
	if !r.post(request{op: opCancel, c: c}) {
		return poll(c)
	}
	if r.closed.Load() {
		done = r.done
	}
	select {
	case <-c.reply:
	case <-done:
		return poll(c)
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

// post sends a request to the owner, and reports false once the owner has
// exited. The plain send is the common case; the select, which locks done
// too, only runs when the mailbox is full.
func (r *runtime) post(req request) bool {
	select {
	case r.mailbox <- req:
		return true
	default:
	}
	select {
	case r.mailbox <- req:
		return true
	case <-r.done:
		return false
	}
}

// deferAcquire joins an Acquire without waking the owner, which is busy:
// it has waiters, and its timer armed for the head. Nothing this Acquire
// could be granted comes before the head's grant (FIFO), and it needs no
// prediction (no deadline, no WithMaxWait or WithMaxQueue), so it can wait
// in the late stack until the owner next wakes, for its timer or any
// message; the owner takes the late stack before anything else it
// handles, so the Acquire keeps its place ahead of every later request.
// On the wait path this saves the owner a wake-up per Acquire.
//
// If the owner stopped being busy meanwhile, it may have parked without a
// timer and without seeing this push: the seq-cst order of the push, the
// owner's clearing of busy and its look at the stack before it parks
// means that then this caller sees busy false, and sends a wake-up.
// Closing is covered as for posted requests: the caller that then sees
// closed false knows the close message, and the owner's final look at the
// stack, come after its push.
func (r *runtime) deferAcquire(c *call, cost int64) {
	c.node.Cost = cost
	for {
		top := r.late.Load()
		c.node.Value = top // the link, while the call is not queued
		if r.late.CompareAndSwap(top, c) {
			break
		}
	}
	r.lateN.Add(1)
	if !r.busy.Load() {
		r.post(request{op: opKick})
	}
}

// takeLate admits the late Acquires, oldest first, as arrivals at now.
func (r *runtime) takeLate(now int64) {
	top := r.late.Swap(nil)
	if top == nil {
		return
	}
	// Reverse the stack into arrival order, restoring each node's Value.
	var first *call
	for c := top; c != nil; {
		next := c.node.Value
		c.node.Value = first
		first, c = c, next
	}
	var n int64
	for c := first; c != nil; n++ {
		next := c.node.Value
		c.node.Value = c
		r.admit(request{op: opAcquire, cost: c.node.Cost, c: c}, now)
		c = next
	}
	r.lateN.Add(-n)
}

// check refuses at once what no owner should see: a cost below 1 or above
// what the owner could ever admit, or any request once it is closed.
func (r *runtime) check(cost, capacity int64) error {
	switch {
	case cost < 1:
		return permits.InvalidCost(cost)
	case cost > capacity:
		return permits.CostExceedsCapacity(cost, capacity)
	case r.closed.Load():
		return permits.ErrClosed
	}
	return nil
}

// ended is the error of a round trip that ended without a grant or a
// refusal: the caller's context ended while it waited, or the owner closed.
func (res result) ended(ctx context.Context) error {
	if res.status == stCanceled {
		if err := ctx.Err(); err != nil {
			return err
		}
		return context.Canceled
	}
	return permits.ErrClosed
}

func (r *runtime) finish(c *call) result {
	res := c.result()
	r.calls.Put(c)
	return res
}

// poll is for a caller that saw the loop exit: an answer may still be in
// its channel. The call is not reused, since the mailbox may still hold it.
func poll(c *call) result {
	select {
	case <-c.reply:
		return c.result()
	default:
		return result{status: stClosed}
	}
}

const maxBatch = 256

func (r *runtime) loop() {
	defer close(r.done)
	var timerC <-chan time.Time
	for {
		var req request
		got := false
		switch {
		case r.late.Load() != nil:
			// Late Acquires are waiting: serve them without parking.
			select {
			case req = <-r.mailbox:
				got = true
			default:
			}
		case timerC == nil:
			req, got = <-r.mailbox, true // nothing timed: a plain receive
		default:
			select {
			case req = <-r.mailbox:
				got = true
			case <-timerC:
				r.armed = 0
			}
		}
		now := r.now() // one clock read per batch
		r.takeLate(now)
		if got {
			if !r.handle(req, now) {
				r.shutdown()
				return
			}
		drain:
			for i := 1; i < maxBatch; i++ {
				select {
				case req = <-r.mailbox:
					// A late Acquire pushed before this message was sent
					// (its own cancellation, say) must be queued first.
					r.takeLate(now)
					if !r.handle(req, now) {
						r.shutdown()
						return
					}
				default:
					break drain
				}
			}
		}
		timerC = r.schedule(now)
	}
}

// handle serves one request; it returns false for the close message.
func (r *runtime) handle(req request, now int64) bool {
	c := req.c
	switch req.op {
	case opClose:
		return false
	case opKick:
	case opCancel:
		if r.q.Remove(&c.node) {
			r.pol.removed()
			r.canceled.add(1)
			c.status = stCanceled
		}
		c.reply <- struct{}{} // the answer, or the acknowledgement of one sent before
	case opRelease:
		r.pol.(releaser).release(req.cost)
	case opRefund:
		r.pol.(refunder).refund(now, req.at, req.cost)
		c.status = stGranted // done
		c.reply <- struct{}{}
	case opAcquire, opTry:
		r.admit(req, now)
	}
	return true
}

func (r *runtime) admit(req request, now int64) {
	c, try := req.c, req.op == opTry
	var at int64
	var known bool
	if r.q.Len() == 0 {
		ok, retry := r.pol.admit(now, req.cost, !try)
		if ok {
			c.waited = false
			r.answer(c, stGranted, now)
			return
		}
		at, known = retry, retry != 0
	} else {
		need := try || req.hasDeadline || r.cfg.maxWait >= 0 || r.cfg.maxQueue > 0
		at, known = r.pol.predict(&r.q, now, req.cost, need)
	}
	wait := at - now
	switch {
	case try:
		r.refuse(c, stLimited, wait)
	case r.cfg.maxQueue > 0 && r.q.Len() >= r.cfg.maxQueue:
		r.refuse(c, stLimited, wait)
	case known && r.cfg.maxWait >= 0 && wait > int64(r.cfg.maxWait):
		r.refuse(c, stLimited, wait)
	case known && req.hasDeadline && at > req.deadline:
		r.refuse(c, stDeadline, wait)
	default:
		c.node.Cost, c.node.Arrival = req.cost, now
		r.q.Push(&c.node)
		if known {
			r.pol.queued(at, req.cost)
		}
		return
	}
	if r.q.Len() > 0 {
		r.pol.dropped()
	}
}

func (r *runtime) refuse(c *call, s status, wait int64) {
	r.rejected.add(1)
	r.answer(c, s, max(wait, 1))
}

// answer writes the result into c and signals its caller: for a grant, n is
// the instant granted at; for a refusal, the RetryAfter in ns.
func (r *runtime) answer(c *call, s status, n int64) {
	if s == stGranted {
		r.granted.add(1)
	}
	c.status, c.n = s, n
	c.reply <- struct{}{}
}

// schedule grants every due head, keeps the one timer armed for the next,
// and returns the channel to wait on.
func (r *runtime) schedule(now int64) <-chan time.Time {
	wake := r.q.Grant(now, owner{r})
	if r.q.Len() == 0 {
		r.pol.idle()
	}
	r.waiting.Store(int64(r.q.Len()))
	r.busy.Store(wake != 0) // waiters, and a timer that will wake the owner
	switch {
	case wake == 0:
		if r.armed != 0 {
			r.timer.Stop()
			r.armed = 0
		}
		return nil
	case wake == r.armed:
	case r.timer == nil:
		r.timer, r.armed = r.cfg.clock.NewTimer(time.Duration(wake-now)), wake
	default:
		r.timer.Reset(time.Duration(wake - now))
		r.armed = wake
	}
	return r.timer.C()
}

// owner adapts the runtime to scheduler.Owner without exporting methods.
type owner struct{ r *runtime }

func (o owner) Decide(at, cost int64) (bool, int64) { return o.r.pol.decide(at, cost) }

// Granted answers a waiter with the instant it was granted at (its
// scheduled instant), which a refund needs.
func (o owner) Granted(n *scheduler.Node[*call], at int64) {
	c := n.Value
	c.waited = true
	o.r.answer(c, stGranted, at)
}

// shutdown fails every waiter and every request still in the mailbox with
// ErrClosed, and answers cancellations, so that no caller waits on an owner
// that is gone.
func (r *runtime) shutdown() {
	if r.timer != nil {
		r.timer.Stop()
	}
	r.busy.Store(false)
	for n := r.q.PopFront(); n != nil; n = r.q.PopFront() {
		r.answer(n.Value, stClosed, 0)
	}
	for c := r.late.Swap(nil); c != nil; {
		next := c.node.Value
		c.node.Value = c
		r.answer(c, stClosed, 0)
		r.lateN.Add(-1)
		c = next
	}
	r.waiting.Store(0)
	for {
		select {
		case req := <-r.mailbox:
			switch req.op {
			case opCancel:
				req.c.reply <- struct{}{}
			case opRefund:
				req.c.status = stClosed // not done
				req.c.reply <- struct{}{}
			case opAcquire, opTry:
				r.answer(req.c, stClosed, 0)
			}
		default:
			return
		}
	}
}

// releaser is a policy whose capacity comes back by message (a pool).
type releaser interface{ release(cost int64) }

// refunder is a policy that can take back a grant made at the instant at
// (ns on the timeline) that was never used (refund.go).
type refunder interface{ refund(now, at, cost int64) }
