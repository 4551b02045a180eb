package actor

import (
	"math"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/owner"
	"github.com/sluicehq/sluice/internal/sat"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/scheduler"
)

// runtime is the owner of one limiter, plugged into the core's loop
// (internal/owner: the inbox, the round trip, the batch, the timer): it
// keeps the FIFO of waiters (or the lanes) and decides each request.
// Everything below the inbox is touched by the owner goroutine only, so
// none of it needs a lock. What it owns (a rate, a pool) plugs in as a
// policy.
type runtime struct {
	cfg   config
	pol   policy
	epoch time.Time // instants are ns since it on the owner's clock
	calls sync.Pool
	o     owner.Owner[*call] // the inbox, the round trip, the loop, the timer
	// atOnce counts the Acquires granted on arrival when the observer
	// reads that count itself (permits.AtOnceObserver); nil otherwise,
	// when granted counts them and the observer is told of each.
	atOnce     *counter
	stopAtOnce func()
	stopOnce   sync.Once

	// state is what the owner publishes to the lock-free paths: stIdle
	// (nothing to do, the fast path may decide), stBusy (handling requests:
	// the fast path must not pass them; stBusyWaiting the same with waiters
	// queued, so arrivals keep their own stamps) or stWaiting (waiters
	// queued: refuse at once, with RetryAfter from tail).
	state   atomic.Int32
	tail    atomic.Int64 // while stWaiting: the earliest instant a newcomer could be granted
	perUnit atomic.Int64 // while stWaiting: ns each unit in the inbox adds to tail; 0: unknown
	_       [40]byte

	granted, rejected, canceled, refunded counter
	waiting                               atomic.Int64 // Acquires sent whose callers have not returned

	// owned by the loop
	q       scheduler.Queue[*call] // the waiters, until the first lane
	lanes   *laneSet               // from the first lane on: the waiters in fair order (waiters.go)
	last    int64                  // the latest instant read: the owner's time never runs back
	arrived int64                  // the latest arrival stamp queued: arrivals keep their order in time
	paused  int64                  // no grant before this instant (Pause)
	pause   pauseLog               // the pause the log has told of (log.go)
	expiry  expiryList
}

const (
	stIdle int32 = iota
	stBusy
	stWaiting
	stBusyWaiting
)

// policy is what an owner owns: the decisions, in ns on its timeline.
type policy interface {
	// admit decides for a request that found the queue empty. On a denial
	// that waiting can cure, retry is the predicted grant instant (0 when
	// only an event can help); a waiting request may close fast paths.
	admit(now, cost int64, wait bool) (ok bool, retry int64)
	// decide is scheduler.Owner.Decide.
	decide(at, cost int64) (ok bool, retry int64)
	// receipt is the record of the last admission, for a grant that may be
	// refunded; at is the instant it was decided for, and admitted the
	// instant it was granted at: for a rate, the instant the algorithm
	// admitted it at (later than at if it had seen a later one); for a
	// pool, whose waiters wait for an event, the owner's reading now.
	receipt() algorithms.Receipt
	admitted(at, now int64) int64
	// quota is what remained after the last admit, and when the state is
	// full again; remaining is -1 when the policy cannot tell.
	quota() (remaining, reset int64)
	// predict returns when cost arriving at arrival would be granted behind
	// everything queued, the owner's clock reading now; known is false when
	// it cannot tell (or need is false and telling would cost more than
	// O(1)).
	predict(q *scheduler.Queue[*call], now, arrival, cost int64, need bool) (grant int64, known bool)
	// queued is told that the request last predicted was queued to be
	// granted at grant; dropped that it was not.
	queued(grant, cost int64)
	dropped()
	// tail is the scheduled instant of the last waiter, when known.
	tail() (int64, bool)
	// removed is told of a cancellation or a refund; idle that the queue
	// is empty.
	removed()
	idle()
}

type op uint8

const (
	opAcquire op = iota
	opTry
	opRefund // a rate grant given back unused (refund.go); answered
	opTune   // a new rate or burst (tune.go)
	opPause  // no grant before an instant (tune.go)
	opSettle // a grant settled at its real cost (tune.go)
	opLanes  // from now on, the waiters in lanes (lane.go)
	opFloor  // the share the lower priorities keep (lane.go)
)

// status is a call's answer: the core's (internal/owner), and the actor's
// own from owner.Custom.
type status = owner.Status

const (
	stGranted  = owner.Granted
	stLimited  = owner.Limited  // refused; n holds RetryAfter
	stDeadline = owner.Deadline // refused because the deadline is before the grant
	stClosed   = owner.Closed
	stCanceled = owner.Canceled
	stRefused  = owner.Custom     // a refund that gave nothing back, a settlement refused
	stTooLarge = owner.Custom + 1 // the cost no longer fits the capacity; n holds the capacity
)

// call is one caller's round trip: its request, its reply channel and its
// place in the queue. Calls are pooled, so an Acquire allocates nothing. The
// owner writes the result fields before it signals reply; the caller reads
// them after.
//
// Every waiter holds one while it waits, so its size is the heap a waiter
// costs beside its reply channel.
type call struct {
	owner.Call[*call] // the reply channel, the inbox's links, the status
	node              scheduler.Node[*call]
	extra             *callExtra
	lane              *Lane // the lane asked, or nil for the limiter itself
	arrival           int64 // the caller's clock when it sent, ns on the timeline
	deadline          int64
	n                 int64  // stGranted: the instant granted at; stLimited, stDeadline: RetryAfter in ns
	gen               uint32 // counts the call's stays in the queue (expiry.go)
	op                op
	hasDL             bool
	waited            bool // stGranted: granted from the queue, not on arrival
	wantRc            bool // stGranted: copy the algorithm's receipt into extra
	wantQuota         bool // opTry: report what remains (extra.remaining, extra.reset)
	probe             bool // opTry on permits.All's behalf: a refusal is not counted (internal/probe)
}

// callExtra holds what only refunds, refundable grants and tuning requests
// carry, allocated the first time a pooled call needs it.
type callExtra struct {
	rc     algorithms.Receipt
	actual int64 // opSettle
	until  int64 // opPause, on the timeline
	rate   algorithms.Rate
	burst  int64 // opTune: a new burst, or 0 for a new rate
	err    error // opTune's outcome

	// opTry with wantQuota: what remains after the decision and when the
	// state is full again (on the timeline), or remaining -1 when unknown.
	remaining, reset int64
}

func (c *call) ext() *callExtra {
	if c.extra == nil {
		c.extra = new(callExtra)
	}
	return c.extra
}

// result reads what the owner wrote into c.
func (c *call) result() result {
	res := result{status: c.Status, waited: c.waited}
	if c.Status == stGranted {
		res.at = c.n
		if c.waited {
			res.arrived = c.node.Arrival
		}
		if c.wantRc {
			res.rc = c.extra.rc
		}
	} else {
		res.retry = time.Duration(c.n)
	}
	if c.op == opTune {
		res.err = c.extra.err
	}
	if c.wantQuota {
		res.remaining, res.reset = c.extra.remaining, c.extra.reset
	}
	return res
}

// wait is how long a granted request waited: from its arrival to the
// instant it was granted at.
func (res result) wait() time.Duration {
	if !res.waited {
		return 0
	}
	return time.Duration(max(res.at-res.arrived, 0))
}

// observe tells the observer, if any, how long a granted Acquire waited.
func (r *runtime) observe(res result) {
	if o := r.cfg.obs; o != nil && res.status == stGranted {
		o.Waited(res.wait())
	}
}

// grantedAtOnce counts an Acquire granted on arrival, on a lock-free path,
// and tells the observer, if any, unless it reads the count itself.
func (r *runtime) grantedAtOnce() {
	if c := r.atOnce; c != nil {
		c.add(1)
		return
	}
	r.granted.add(1)
	if o := r.cfg.obs; o != nil {
		o.Waited(0)
	}
}

// countAtOnce hands an observer that counts the Acquires granted at once
// itself the count to read (permits.AtOnceObserver).
func (r *runtime) countAtOnce() {
	if o, ok := r.cfg.obs.(permits.AtOnceObserver); ok {
		r.atOnce = new(counter)
		r.stopAtOnce = o.CountAtOnce(r.atOnce.load)
	}
}

// newCall makes a call for a runtime's pool. Each runtime has its own pool:
// a channel made inside a testing/synctest bubble must not be used outside
// it, and a limiter lives in one bubble.
func newCall() any {
	c := new(call)
	c.Init(c)
	c.node.Value = c
	return c
}

// result is what a round trip tells its caller.
type result struct {
	status status
	retry  time.Duration
	at     int64 // stGranted: the grant's instant on the owner's timeline
	waited bool  // stGranted: the request waited in the queue
	// stGranted with waited: the instant it arrived at, on the timeline
	arrived int64
	rc      algorithms.Receipt
	err     error // opTune
	// opTry with wantQuota: what remains, and when full again (timeline)
	remaining, reset int64
}

func newRuntime(cfg config, pol policy, labels pprof.LabelSet) *runtime {
	r := &runtime{cfg: cfg, pol: pol, epoch: cfg.clock.Now()}
	r.calls.New = newCall
	r.countAtOnce()
	r.o.Init(r.stamp, func(d time.Duration) owner.Timer { return cfg.clock.NewTimer(d) })
	r.o.Start(labels, r)
	return r
}

// now reads the owner's clock as ns on its timeline, never earlier than a
// reading before: an injected clock that goes back reads as no time passing.
func (r *runtime) now() int64 {
	r.last = max(r.last, int64(r.cfg.clock.Now().Sub(r.epoch)))
	return r.last
}

// stamp is a caller's reading of the clock, ns on the timeline.
func (r *runtime) stamp() int64 { return int64(r.cfg.clock.Now().Sub(r.epoch)) }

// ownerStamp in a call's arrival means "the owner's reading when it takes
// the request": see arrivalStamp.
const ownerStamp = math.MinInt64

// arrivalStamp is the arrival instant a caller sends with its request.
// While waiters are queued, a request may wait for the owner (it does not
// wake an owner that sleeps on its timer, and the queue's instants are what
// it is scheduled from; a wake-up that runs late, or the one the core
// starts after it, keeps it waiting too), so the caller's own reading
// keeps its place in virtual time. Otherwise the request is taken at the owner's next batch,
// whose reading is its arrival, and the caller saves a clock read (about
// 40ns on a virtual machine): the owner is idle and the request wakes it, or
// busy with requests that are granted at once. Only a decision that is slow
// while nobody waits then stamps the requests behind it late, which costs
// them the capacity that came back during the stall, never more than the
// algorithm allows.
func (r *runtime) arrivalStamp() int64 {
	if s := r.state.Load(); s != stWaiting && s != stBusyWaiting {
		return ownerStamp
	}
	return r.stamp()
}

// Wake opens a wake-up (owner.Plugin): the fast path is closed before the
// clock is read and the inbox taken, so a fast-path caller that then finds
// the inbox empty also finds the owner busy, and stays off the state the
// owner is about to decide on.
func (r *runtime) Wake(bool) int64 {
	if r.queueLen() > 0 {
		r.state.Store(stBusyWaiting)
	} else {
		r.state.Store(stBusy)
	}
	return r.now() // one clock read per batch
}

// Cancel removes a waiter whose caller gave up at at (owner.Plugin). It
// grants first what was due by then: a deadline at the very instant of its
// grant gets the grant, and a head the cancellation promotes is due from
// then.
func (r *runtime) Cancel(oc *owner.Call[*call], at, _ int64) {
	r.catchUp(at)
	if r.cancel(oc.Self, at) {
		// The room it leaves is there from at, not before: an arrival of
		// this batch that came earlier was behind it until then, and is
		// judged from then (admit).
		r.arrived = max(r.arrived, at)
	}
}

// Handle serves one request taken from the inbox (owner.Plugin).
func (r *runtime) Handle(oc *owner.Call[*call], now int64) {
	c := oc.Self
	if (c.op == opAcquire || c.op == opTry) && r.queueLen() > 0 {
		// Heads that fell due by its arrival go first, at their due
		// instants: a late owner must neither let the arrival pass them
		// (a lane's newcomer) nor count them against it (MaxQueue, the
		// prediction).
		r.catchUp(r.arrivalOf(c, now))
	}
	r.handle(c, now)
}

// handle serves one request taken from the inbox.
func (r *runtime) handle(c *call, now int64) {
	switch c.op {
	case opRefund:
		s := stRefused
		at := r.changing()
		if r.pol.(refunder).refund(at, c.extra.rc) {
			r.changed(at) // the head may fit sooner
			s = stGranted
		}
		r.reply(c, s, 0)
	case opAcquire, opTry:
		r.admit(c, now)
	case opTune, opPause, opSettle:
		r.control(c, now)
	case opLanes, opFloor:
		r.laneControl(c, now)
	}
}

// cancel removes a waiter whose caller gave up, wherever it is, or
// acknowledges a cancellation that came after the answer. It reports
// whether a waiter left the queue.
func (r *runtime) cancel(c *call, at int64) bool {
	if r.unqueue(c, at) {
		r.canceled.add(1)
		r.reply(c, stCanceled, 0)
		return true
	}
	c.Signal() // the acknowledgement of an answer sent before
	return false
}

func (r *runtime) admit(c *call, now int64) {
	if r.overCapacity(c) {
		return
	}
	at := r.arrivalOf(c, now)
	grant, known, granted := r.judge(c, now, at)
	if granted {
		return
	}
	floor := r.floorOf(grant, known, now, at)
	if c.wantQuota && (r.queueLen() > 0 || at < r.paused) {
		x := c.ext()
		x.remaining, x.reset = 0, floor // behind the queue or a pause: nothing remains until then
	}
	var ln *Lane // read before any reply: an answered call is the caller's to reuse
	if r.lanes != nil {
		ln = r.lanes.laneOf(c)
	}
	if r.queueOrRefuse(c, at, now, grant, floor, known) {
		return
	}
	switch {
	case r.lanes != nil:
		r.lanes.dropped(ln)
	case r.q.Len() > 0:
		r.pol.dropped()
	}
}

// overCapacity refuses c if its cost no longer fits: the caller checked
// the cost against the capacity it read, and a SetBurst (or a window's new
// limit) handled just before this request may have lowered it since.
func (r *runtime) overCapacity(c *call) bool {
	t, ok := r.pol.(tuner)
	if !ok {
		return false
	}
	if capacity := t.capacity(); c.node.Cost > capacity {
		r.reply(c, stTooLarge, capacity)
		return true
	}
	return false
}

// judge grants c at once if the queue is empty and the policy admits it
// (granted); otherwise it predicts when c would be granted (grant, known
// false when it cannot tell).
func (r *runtime) judge(c *call, now, at int64) (grant int64, known, granted bool) {
	try := c.op == opTry
	switch {
	case r.queueLen() == 0 && at < r.paused:
		// Paused: nothing before the pause ends; the head's instant (the
		// end of the pause) bounds the wait from below.
		return 0, false, false
	case r.queueLen() == 0:
		ok, retry := r.pol.admit(at, c.node.Cost, !try)
		if c.wantQuota {
			x := c.ext()
			x.remaining, x.reset = r.pol.quota()
		}
		if ok {
			c.waited = false
			r.grant(c, at)
			return 0, false, true
		}
		return retry, retry != 0, false
	}
	need := try || c.hasDL || r.cfg.maxWait >= 0 || r.cfg.maxQueue > 0
	if r.lanes != nil {
		grant, known = r.lanes.predictFor(c, now, at, try, need)
	} else {
		grant, known = r.pol.predict(&r.q, now, at, c.node.Cost, need)
	}
	return grant, known, false
}

// floorOf is the earliest instant c could be granted at. Without a
// prediction, the head's due instant (or the end of a pause) is a lower
// bound on any wait behind it: refuse what even that cannot meet. With
// lanes a newcomer may go before the head: only the latest grant, a pause
// and its arrival bound it.
func (r *runtime) floorOf(grant int64, known bool, now, at int64) int64 {
	switch {
	case known:
		return grant
	case r.lanes != nil:
		return max(r.lanes.floor(at), r.paused)
	default:
		return max(r.q.Due(now), r.paused, now+1)
	}
}

// queueOrRefuse queues c, or refuses it when it may not wait (a
// TryAcquire, a full queue) or cannot be granted in time (WithMaxWait
// counted from its arrival, its deadline). It reports whether c was
// queued.
func (r *runtime) queueOrRefuse(c *call, at, now, grant, floor int64, known bool) bool {
	wait := floor - now
	switch {
	case c.op == opTry:
		r.refuse(c, stLimited, wait)
	case r.cfg.maxQueue > 0 && r.queueLen() >= r.cfg.maxQueue:
		r.refuse(c, stLimited, wait)
	case r.cfg.maxWait >= 0 && floor-at > int64(r.cfg.maxWait): // counted from its arrival
		r.refuse(c, stLimited, wait)
	case c.hasDL && floor > c.deadline:
		r.refuse(c, stDeadline, wait)
	default:
		r.enqueue(c, at, grant, known)
		return true
	}
	return false
}

// enqueue queues c, arrived at at, to be granted at grant when known.
func (r *runtime) enqueue(c *call, at, grant int64, known bool) {
	c.node.Arrival = at
	r.arrived = at
	c.gen++ // a new stay in the queue: entries about an earlier one are stale
	r.push(c)
	if r.lanes != nil {
		r.lanes.queued(c, grant, known)
		if r.cfg.maxWait >= 0 {
			// A lane's prediction is a lower bound: the owner enforces
			// the bound (laneset.go).
			r.expiry.add(c, sat.After(at, r.cfg.maxWait))
		}
		return
	}
	if known {
		r.pol.queued(grant, c.node.Cost)
	} else if r.cfg.maxWait >= 0 {
		// Nobody can tell when it will be granted: the owner expires it
		// when its wait runs out (expiry.go).
		r.expiry.add(c, sat.After(at, r.cfg.maxWait))
	}
}

// arrivalOf is the instant c is judged at: its caller's stamp, kept in
// order behind the arrivals before it and never in the future, or the
// owner's reading for a call that carries none.
func (r *runtime) arrivalOf(c *call, now int64) int64 {
	if c.arrival == ownerStamp {
		return now
	}
	return min(max(c.arrival, r.arrived), now)
}

func (r *runtime) refuse(c *call, s status, wait int64) {
	if !c.probe {
		r.rejected.add(1)
	}
	r.reply(c, s, max(wait, 1))
}

// grant answers c with a grant decided for the instant at, copying the
// algorithm's receipt when the caller asked for one.
func (r *runtime) grant(c *call, at int64) {
	r.granted.add(1)
	if c.wantRc {
		c.ext().rc = r.pol.receipt()
	}
	r.reply(c, stGranted, r.pol.admitted(at, r.last))
}

// reply writes the result into c and signals its caller: for a grant, n is
// the instant granted at; for a refusal, the RetryAfter in ns. The counters
// are updated before, so that they are exact when the caller returns.
func (r *runtime) reply(c *call, s status, n int64) {
	c.Status, c.n = s, n
	c.Signal()
}

// schedule grants every due head, expires waiters whose wait ran out, keeps
// the one timer armed for the next of those, publishes the state for the
// lock-free paths, and returns the channel to wait on.
//
// A slow decision (a remote algorithm, a GC pause) can take the owner past
// the instants of the waiters behind the head it was granting: the clock is
// read again after the pass, and a head due by then makes the core start
// the next wake-up at once (owner.run), which serves the cancellations
// that came meanwhile before it grants the head, so that no grant is
// delivered later than max(its scheduled instant, the moment the owner is
// free again) and none to a caller that gave up before it. The timer is
// armed from a fresh reading too, so a stall never makes the next wake-up
// late as well.
func (r *runtime) Schedule(now int64) (wake, at int64) {
	r.logResumed(now)
	tick := r.tick(now) // before the heads: a limit it raises grants them now
	wake = r.catchUp(now)
	for _, e := range [...]int64{r.expiry.next(r), tick} {
		if e != 0 && (wake == 0 || e < wake) {
			wake = e
		}
	}
	if wake == 0 && r.paused > now {
		wake = r.paused // to reopen the lock-free paths when the pause ends
	}
	if wake != 0 {
		// The timer is armed from a fresh reading; what fell due by it
		// is the next wake-up's, which the core starts at once, after the
		// cancellations that came meanwhile (owner.run).
		now = r.now()
	}
	if r.queueLen() == 0 {
		r.pol.idle()
		r.expiry.clear()
		if r.lanes != nil {
			r.lanes.idle()
		}
	}
	r.publish(wake, now)
	return wake, now // the core arms the timer from this fresh reading
}

// publish tells the lock-free paths what they may do until the owner next
// wakes: decide on their own (idle), or refuse at once behind the queue or
// a pause, with a RetryAfter of at least the time until the tail's grant.
// When the owner could predict the tail but has not (no waiter needed a
// prediction, or a cancellation made the last one stale) and more than
// the head waits, it publishes no tail at all: the head's due instant
// would tell a newcomer the head's wait, not its own, and a client that
// slept that long would be refused again, once per waiter. A refusal then
// asks the owner, which predicts once and publishes the tail for the
// refusals after it. (Behind the head alone, its instant is within one
// interval of a newcomer's.)
func (r *runtime) publish(wake, now int64) {
	if r.queueLen() == 0 && r.paused <= now {
		r.state.Store(stIdle)
		return
	}
	p, rate := r.pol.(*ratePolicy)
	var per int64 // ns a unit adds, for an algorithm that gives units back at a steady rate
	if rate {
		per = p.perUnit()
	}
	tail := max(wake, r.paused)
	t, ok := r.pol.tail()
	switch {
	case r.lanes != nil:
		t, ok = r.lanes.tail()
		if d, known := r.lanesDrain(now, per); known {
			t, ok = max(t, d), true
		}
		per = 0 // the inbox's arrivals may go before waiters of other lanes: not counted
	case !ok && rate && p.cloner != nil && r.q.Len() > 1:
		tail = 0 // unknown: ask the owner (Limiter.behind)
	}
	if ok {
		tail = max(tail, t)
	}
	r.tail.Store(tail)
	r.perUnit.Store(per)
	r.state.Store(stWaiting)
}

// lanesDrain is when the lanes' queue could be empty, for a TryAcquire,
// which passes no waiter of any lane: whatever their fair order, the
// waiters behind the head need their costs granted after it, each unit an
// interval per of a steady rate. Unknown (false) for other algorithms.
func (r *runtime) lanesDrain(now, per int64) (int64, bool) {
	h, _ := r.lanes.fair.Head()
	if per == 0 || h == nil {
		return 0, false
	}
	behind := r.lanes.fair.Cost() - h.Cost
	return sat.After(r.due(now), time.Duration(sat.Times(behind, per))), true
}

// queueOwner adapts the runtime to scheduler.Owner without exporting methods.
type queueOwner struct{ r *runtime }

func (o queueOwner) Decide(at, cost int64) (bool, int64) { return o.r.pol.decide(at, cost) }

// Granted answers a waiter with the instant it was granted at (its
// scheduled instant), which a refund needs.
func (o queueOwner) Granted(n *scheduler.Node[*call], at int64) {
	c := n.Value
	c.waited = true
	if o.r.lanes != nil {
		o.r.lanes.granted(c)
	}
	o.r.grant(c, at)
}

// refunder is a policy that can take back a grant that was never used
// (refund.go).
type refunder interface {
	refund(now int64, rc algorithms.Receipt) bool
}
