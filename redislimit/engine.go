package redislimit

import (
	"context"
	"errors"
	"math/bits"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/probe"
	"github.com/sluicehq/sluice/permits"
)

// engine is the owner of one Limiter or Keyed: one goroutine that takes
// requests from its inbox in batches, keeps each key's FIFO line of
// waiters and the slots Redis reserved for them, arms one timer for the
// earliest due slot, and answers each caller on its own reply channel; and
// worker goroutines (workers.go) that make the script calls, so that a slow
// Redis never delays a grant already reserved. A batch goes to one node
// (node.go): on a Cluster, each master has its own batch in flight and its
// own health. Everything below the inbox is touched by one holder at a
// time: the owner, or a lone caller on the direct path (direct.go).
//
// The inbox is actor's (inbox.go there, and here): one lock-free stack of
// requests, pushed with one CAS, taken whole with one swap; cancellations
// on a second stack; a wake channel of capacity one.
type engine struct {
	cfg    config
	client redis.UniversalClient
	q      quota
	win    *window       // a sliding window's; nil for GCRA
	args   []any         // the script's leading arguments, its parameters: boxed once
	script *redis.Script // the script a call runs (a lone GCRA request: leanScript)
	nowArg int           // the index in a call's arguments of the instant to decide at
	keep   bool          // one key: its state is kept while idle, not made again per request
	prefix string        // Keyed: the keys' prefix
	logKey string        // the key, or a Keyed's prefix, that log lines name
	epoch  time.Time
	local  *actor.Limiter // fail open; nil when failing closed
	// bounded says that the client ends a call at its context's deadline
	// (ContextTimeoutEnabled), so that a caller may make its call itself
	// (direct.go).
	bounded bool
	// replayID names this engine's replay keys, and callID counts its
	// calls that give back (replay.go).
	replayID string
	callID   uint64

	tok     atomic.Int32          // who holds the state below (direct.go)
	calling atomic.Bool           // one node's batch is under way: its answer makes the owner take the inbox
	inline  atomic.Pointer[batch] // the batch a caller on the direct path is making (direct.go)
	inlineT *time.Timer           // the direct path's deadline, reused by whoever holds the state
	inbox   atomic.Pointer[request]
	cancels atomic.Pointer[request]
	wake    chan struct{} // capacity 1
	results chan *batch   // the batches under way, answered: one per node at most
	closed  atomic.Bool
	once    sync.Once
	done    chan struct{} // the owner has exited
	ioCtx   context.Context
	ioStop  context.CancelFunc
	workers pool
	// replies holds reply channels for reuse. A request's channel is empty
	// and never signalled again once await returns: the owner signals a
	// request once, after winning its CAS (finish), and a caller returns
	// only after receiving that signal, or after winning the CAS itself, or
	// after the owner exited without signalling. Making a channel per
	// request was a tenth of a loaded limiter's CPU profile. The pool is
	// the engine's, not the package's: a channel made in a testing/synctest
	// bubble belongs to it, and so does a limiter made there.
	replies sync.Pool
	// requests holds granted requests for reuse (recycle); the engine's,
	// like replies.
	requests sync.Pool

	granted, rejected, canceled, unavailable, fellOpen atomic.Uint64
	calls, decided, handedOff, givenBack, refunded     atomic.Uint64
	directs, moves                                     atomic.Uint64
	waiting                                            atomic.Int64

	// the owner's
	keys     map[string]*keyState
	ready    []*keyState // keys with requests to send
	dirty    []*keyState // keys whose slots must be dealt out again
	timed    []*keyState // keys with reserved waiters
	labels   pprof.LabelSet
	node0    *node    // a plain client's one node; a Cluster's slots not yet routed
	router   *router  // a ClusterClient's: keys to the masters of their slots (node.go)
	nbusy    int      // batches under way, over every node
	started  []*batch // dispatch's, reused
	timer    actor.Timer
	timerC   <-chan time.Time // the armed timer's channel, or nil
	armed    bool
	armedAt  int64
	last     int64
	rtt      int64     // the latest batch's round trip, ns
	one      *keyState // a Limiter's one key, once lone has seen it
	loneA    []any     // the latest lone call's arguments (loneArgs)
	loneCost int64
	loneMW   int64
	loneFl   pair
	scratchB []byte
}

// newEngine starts the owner of a GCRA (win nil) or of a sliding window
// (q then holds its limit as the burst, the most one request may cost).
func newEngine(client redis.UniversalClient, q quota, win *window, opts []Option) (*engine, error) {
	if client == nil || isNilPointer(client) {
		return nil, invalid("nil redis client")
	}
	cfg := defaults()
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.clock == nil {
		cfg.clock = systemClock{}
	}
	e := &engine{cfg: cfg, client: client, q: q, win: win, bounded: keepsDeadlines(client), replayID: newReplayID()}
	if cfg.open {
		var err error
		if e.local, err = localLimiter(q, win, cfg); err != nil {
			return nil, err
		}
	}
	if win != nil {
		e.args = []any{strconv.FormatInt(win.limit, 10), strconv.FormatInt(win.span, 10)}
		e.script, e.nowArg = windowScript, 2
	} else {
		e.args = []any{strconv.FormatInt(q.p, 10), strconv.FormatInt(q.c, 10), strconv.FormatInt(q.tau.w, 10), strconv.FormatInt(q.tau.f, 10)}
		e.script, e.nowArg = gcraScript, 4
	}
	e.epoch = cfg.clock.Now()
	e.wake = make(chan struct{}, 1)
	e.replies.New = func() any { return make(chan struct{}, 1) }
	e.node0 = &node{}
	e.results = make(chan *batch, 1)
	if e.router = newRouter(client); e.router != nil {
		// A worker that delivers a batch may wait for the owner to take
		// another's; room for a few spares it the wait.
		e.results = make(chan *batch, 16)
	}
	e.done = make(chan struct{})
	e.keys = make(map[string]*keyState)
	e.ioCtx, e.ioStop = context.WithCancel(context.Background())
	e.tok.Store(tokFree) // the owner starts asleep with nothing to do
	e.labels = pprof.Labels("sluice.limiter", "redislimit")
	if e.router != nil {
		e.warm(e.now()) // before the owner starts: it reads the router's state
	}
	go pprof.Do(context.Background(), e.labels, func(context.Context) { e.loop() })
	return e, nil
}

// isNilPointer reports whether client is a nil pointer in an interface,
// such as a (*redis.Client)(nil), which would pass a nil check and panic
// at the first call.
func isNilPointer(client redis.UniversalClient) bool {
	v := reflect.ValueOf(client)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// keepsDeadlines reports whether client ends a call at its context's
// deadline: go-redis does so only with ContextTimeoutEnabled, and a client
// of another type is taken not to.
func keepsDeadlines(client redis.UniversalClient) bool {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// localLimiter is the fail-open limiter: num/den of the rate and burst,
// or of a window's limit.
func localLimiter(q quota, win *window, cfg config) (*actor.Limiter, error) {
	num, den := cfg.openNum, cfg.openDen
	if num < 1 || den < num {
		return nil, invalid("WithFailOpen(%d, %d): want 0 < num <= den", num, den)
	}
	if win != nil {
		return win.local(num, den, cfg)
	}
	r := q.rate
	if r.Count > (1<<62)/den || int64(r.Per) > (1<<62)/den {
		return nil, invalid("WithFailOpen(%d, %d): the share of %v overflows", num, den, r)
	}
	share := algorithms.Rate{Count: r.Count * num, Per: r.Per * time.Duration(den)}
	hi, lo := bits.Mul64(uint64(q.burst), uint64(num))
	burst, _ := bits.Div64(hi, lo, uint64(den)) // hi < den: num <= den
	g, err := algorithms.NewGCRA(share, max(1, int64(burst)))
	if err != nil {
		return nil, err
	}
	return actor.MustNew(g, actor.WithClock(cfg.clock), actor.WithName("redislimit fail-open")), nil
}

// now reads the owner's clock as ns on its timeline, never earlier than a
// reading before.
func (e *engine) now() int64 {
	e.last = max(e.last, int64(e.cfg.clock.Now().Sub(e.epoch)))
	return e.last
}

// stamp is a caller's reading of the clock, ns on the timeline.
func (e *engine) stamp() int64 { return int64(e.cfg.clock.Now().Sub(e.epoch)) }

// send pushes r onto the inbox and wakes the owner.
func (e *engine) send(r *request) {
	if r.op == opAcquire {
		e.waiting.Add(1) // before the owner can answer, which takes it back
	}
	for {
		top := e.inbox.Load()
		r.next = top
		if e.inbox.CompareAndSwap(top, r) {
			break
		}
	}
	// An Acquire need not wake the owner while a batch is under way: it
	// can only go in the next batch, and the owner takes the inbox when
	// the answer comes. The owner clears calling and then takes the inbox;
	// the caller pushes and then reads calling: one of them sees the
	// other. Under load this spares the owner a wake-up per request.
	// A caller on the direct path is woken for all the same: the owner
	// keeps the deadline of that caller's call (watch).
	if r.op != opAcquire || !e.calling.Load() || e.tok.Load() == tokCaller {
		e.kick()
	}
}

// sendCancel tells the owner that r's caller gave up.
func (e *engine) sendCancel(r *request) {
	for {
		top := e.cancels.Load()
		r.cancelNext = top
		if e.cancels.CompareAndSwap(top, r) {
			break
		}
	}
	e.kick()
}

func (e *engine) kick() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *engine) pending() bool {
	return e.inbox.Load() != nil || e.cancels.Load() != nil || len(e.results) > 0
}

// take returns the cancellations and the requests pushed so far, each
// oldest first.
func (e *engine) take() (cancels, arrivals *request) {
	for r := e.cancels.Swap(nil); r != nil; {
		next := r.cancelNext
		r.cancelNext = cancels
		cancels, r = r, next
	}
	for r := e.inbox.Swap(nil); r != nil; {
		next := r.next
		r.next = arrivals
		arrivals, r = r, next
	}
	return cancels, arrivals
}

func (e *engine) loop() {
	defer close(e.done)
	var timerC <-chan time.Time // the timer's channel, read while holding the state
	for {
		var b *batch
		if !e.pending() {
			b = e.park(timerC)
		}
		for !e.own() {
			// A caller runs a round (direct.go); it wakes the owner when
			// it lets go. No batch of the owner's is under way meanwhile
			// (it lets go only when none is), so b is nil.
			if b != nil {
				e.results <- b
				b = nil
			}
			e.watch()
		}
		if b == nil {
			select {
			case b = <-e.results:
			default:
			}
		}
		if e.closed.Load() {
			e.shutdown(b)
			return
		}
		e.round(b, nil)
		e.schedule(onOwner)
		timerC = e.timerC
		e.letGo()
	}
}

// round takes in what is waiting for the owner: the answers of the batch
// under way (b, if it came), the requests in the inbox (after first, a
// caller's own request on the direct path) and the cancellations. It
// reports whether the inbox held any request.
func (e *engine) round(b *batch, first *request) bool {
	if b != nil {
		e.calling.Store(false) // before taking the inbox (send)
	}
	now := e.now() // one clock read per batch of messages
	cancels, arrivals := e.take()
	if b != nil {
		e.end(b)
		e.apply(b, now)
	}
	if first != nil {
		e.arrive(first, now)
	}
	e.intake(cancels, arrivals, now)
	return arrivals != nil
}

// intake takes in the requests taken from the inbox, then the
// cancellations.
func (e *engine) intake(cancels, arrivals *request, now int64) {
	for r := arrivals; r != nil; {
		next := r.next
		e.arrive(r, now)
		r = next
	}
	for r := cancels; r != nil; {
		next := r.cancelNext
		e.cancel(r, now)
		r = next
	}
}

// park sleeps until a message, an answer from Redis or the timer (timerC,
// nil when none is armed: always so when the owner has let go of the
// state).
func (e *engine) park(timerC <-chan time.Time) *batch {
	select {
	case <-e.wake:
	case b := <-e.results:
		return b
	case <-timerC:
		e.armed = false
	}
	return nil
}

// Who runs schedule: the owner goroutine, or a caller on the direct path,
// which either makes the next batch itself (callerInline: schedule returns
// it) or leaves it to a worker like the owner.
const (
	onOwner = iota
	onCaller
	onCallerInline
)

// schedule deals out freed slots, grants every due waiter, starts the
// next batch if none is under way (on a worker, or with onCallerInline
// and no slot ahead, on the calling goroutine: schedule then returns it
// for the caller to make), and keeps the one timer armed for the earliest
// slot still ahead,
// from a fresh clock reading. The clock is read again after every pass, so
// that a pass that took long grants what fell due meanwhile before the
// owner sleeps.
func (e *engine) schedule(on int) *batch {
	for {
		now := e.now()
		e.reassignDirty(now)
		before := e.granted.Load()
		wake := e.grantDue(now)
		if e.nbusy == 0 && on == onOwner && e.granted.Load()-before >= regather {
			// What came back is dealt and granted as the rest is, at a
			// fresh instant, before the batch goes.
			e.regather()
			now = e.now()
			e.reassignDirty(now)
			wake = e.grantDue(now)
		}
		bs := e.dispatch(now)
		if len(bs) == 1 && on == onCallerInline && wake == 0 {
			// The caller makes the call only when no reserved waiter
			// falls due meanwhile: the owner's timer grants those, and a
			// slow call must not hold them back.
			return bs[0]
		}
		for _, b := range bs {
			e.start(b)
		}
		fresh := e.now()
		if wake == 0 || wake > fresh {
			e.arm(wake, fresh)
			return nil
		}
	}
}

// reassignDirty deals out again the slots of the keys marked dirty.
func (e *engine) reassignDirty(now int64) {
	for _, ks := range e.dirty {
		ks.dirty = false
		e.reassign(ks, now)
	}
	e.dirty = e.dirty[:0]
}

// regather is how many grants in one pass make the owner let their callers
// run before it sends the next batch.
const regather = 2

// regatherYields bounds the yields of one regather.
const regatherYields = 8

// regather lets the callers just granted run before the next batch is
// sent, and takes in what they sent meanwhile. Callers that loop on the
// limiter (a pool of workers) ask again at once; without it the next
// batch would leave out every one of them and go with only those that
// came during the call before, so the callers would split into two halves
// that take turns, each waiting a whole call for the other. One yield
// lets only some of them run before the owner is scheduled again (another
// P takes it from the global queue), so it yields again while each yield
// brings more: at 64 callers on one key a call then carries about 55
// requests instead of 44, and the limiter decides 10-15% more per second.
// It stops at a yield that brings nobody, after regatherYields yields, or
// once it has spent half the latest call's round trip: on a machine whose
// CPUs are busy a yield can take a scheduler slice, and waiting longer than
// a call saves nothing.
// Only the owner regathers: a caller on the direct path has its answer
// already, and is not made to wait for others.
func (e *engine) regather() {
	start := e.now()
	for range regatherYields {
		runtime.Gosched()
		cancels, arrivals := e.take()
		if cancels == nil && arrivals == nil {
			return
		}
		now := e.now()
		e.intake(cancels, arrivals, now)
		if now-start >= e.rtt/2 {
			return
		}
	}
}

// arm keeps the one timer armed for wake (0: none), from now.
func (e *engine) arm(wake, now int64) {
	switch {
	case wake == 0:
		if e.armed {
			e.timer.Stop()
			e.armed = false
		}
		e.timerC = nil
		return
	case e.armed && wake == e.armedAt:
		return
	case e.timer == nil:
		e.timer = e.cfg.clock.NewTimer(time.Duration(wake - now))
	default:
		e.timer.Reset(time.Duration(wake - now))
	}
	e.armed, e.armedAt, e.timerC = true, wake, e.timer.C()
}

// arrive takes in one request from the inbox.
func (e *engine) arrive(r *request, now int64) {
	if r.state.Load() == rqCancelled {
		return // its caller gave up before the owner saw it; nothing was held
	}
	ks := e.key(r.key)
	r.ks = ks
	switch r.op {
	case opRefund, opSettle, opPause:
		if r.op == opPause {
			// It holds here once Redis holds it (settled): a Pause whose
			// call fails changes nothing.
			r.actual = e.redisMicros(ks, r.until)
		}
		ks.refunds = append(ks.refunds, r)
		e.markReady(ks)
		return
	case opTry:
		if ks.acquires > 0 {
			// FIFO: a TryAcquire never passes a waiter. Its RetryAfter is
			// a lower bound: the wait behind what this process knows of.
			e.finish(r, stLimited, ks.behind(e, r.cost, now)-now, nil)
			e.forget(ks)
			return
		}
	case opAcquire:
		ks.acquires++
	}
	r.phase = phPending
	ks.line = append(ks.line, r)
	ks.pending++
	if ks.spare() {
		e.markDirty(ks) // a slot nobody holds may cover it, without a call
	}
	e.markReady(ks)
}

// cancel hands on what a request whose caller gave up held: nothing, if it
// was not yet sent; its slot, if Redis had reserved one; and if it is in
// the call under way, its slot is dealt with when the answer comes.
func (e *engine) cancel(r *request, now int64) {
	ks := r.ks
	if ks == nil {
		return // never taken in (arrive dropped it)
	}
	switch r.phase {
	case phPending:
		ks.remove(r)
		e.forget(ks)
	case phReserved:
		r.slot.holders--
		ks.remove(r)
		e.markDirty(ks)
	case phInflight, phGone:
		// apply finds it cancelled; or it was answered already.
	}
}

func (e *engine) key(name string) *keyState {
	ks := e.keys[name]
	if ks == nil {
		ks = &keyState{name: name}
		if e.router != nil {
			ks.slot = slotOf(name)
		}
		e.keys[name] = ks
	}
	return ks
}

func (e *engine) markReady(ks *keyState) {
	if !ks.ready {
		ks.ready = true
		e.ready = append(e.ready, ks)
	}
}

func (e *engine) markDirty(ks *keyState) {
	if !ks.dirty {
		ks.dirty = true
		e.dirty = append(e.dirty, ks)
	}
}

func (e *engine) markTimed(ks *keyState) {
	if !ks.timed {
		ks.timed = true
		e.timed = append(e.timed, ks)
	}
}

// forget drops a key the owner holds nothing for, unless it is the one
// key of a Limiter or Window.
func (e *engine) forget(ks *keyState) {
	if !e.keep && ks.idle() {
		delete(e.keys, ks.name)
	}
}

// shutdown takes the batches under way from their workers (whose late
// answers are then dropped), fails every waiter with ErrClosed, and then stops the
// workers, waiting for any still inside go-redis.
func (e *engine) shutdown(b *batch) {
	if e.timer != nil {
		e.timer.Stop()
	}
	e.ioStop()
	for _, b := range e.closeBatches(b) {
		for _, kc := range b.keys {
			for _, r := range kc.reqs {
				e.finish(r, stClosed, 0, nil)
			}
			for _, r := range append(kc.settles, kc.pauses...) {
				e.finish(r, stClosed, 0, nil)
			}
		}
	}
	for _, ks := range e.keys {
		for _, r := range ks.line {
			e.finish(r, stClosed, 0, nil)
		}
		for _, r := range ks.refunds {
			e.finish(r, stClosed, 0, nil)
		}
	}
	_, arrivals := e.take()
	for r := arrivals; r != nil; r = r.next {
		e.finish(r, stClosed, 0, nil)
	}
	// Last: a worker stuck inside go-redis returns only when go-redis
	// does, and neither the waiters nor Close wait for that.
	e.workers.close(e.cfg.callTimeout)
	if e.local != nil {
		e.local.Close()
	}
}

// close sets closed, wakes the owner and waits for it to exit. closed is
// set first, so that a caller that reads it false after pushing its
// request knows the owner's last take of the inbox comes after the push.
func (e *engine) close() {
	e.once.Do(func() {
		e.closed.Store(true)
		e.kick()
	})
	<-e.done
}

// redisMicros is the local instant t at Redis's clock, in µs rounded up,
// through the offset the key's latest call measured, or the local wall
// clock before any.
func (e *engine) redisMicros(ks *keyState, t time.Time) int64 {
	var us int64
	if ks.off == 0 {
		us = t.UnixMicro()
		if t.Nanosecond()%1000 != 0 {
			us++
		}
	} else {
		// (d - off) / 1000 rounded up, in µs so as not to overflow: t may
		// be centuries ahead (a pause "for ever"), and Sub saturates.
		d := int64(t.Sub(e.epoch))
		dq, dr := floorDivMod(d, 1000)
		oq, or := floorDivMod(ks.off, 1000)
		us = dq - oq
		if dr > or {
			us++
		}
	}
	return min(us, maxExact-1)
}

// floorDivMod returns a/b rounded down and the remainder, in [0, b).
func floorDivMod(a, b int64) (int64, int64) {
	q, r := a/b, a%b
	if r < 0 {
		q, r = q-1, r+b
	}
	return q, r
}

// check refuses at once what no owner should see.
func (e *engine) check(cost int64) error {
	switch {
	case cost < 1:
		return permits.InvalidCost(cost)
	case cost > e.q.burst:
		return permits.CostExceedsCapacity(cost, e.q.burst)
	case e.closed.Load():
		return permits.ErrClosed
	}
	return nil
}

// Limiters and windows answer a probe of permits.All (internal/probe).
func init() {
	probe.Register((*Limiter)(nil))
	probe.Register((*Window)(nil))
}

// acquire is Acquire for the Redis key name: the round trip and what its
// answer means. A refusal by the limit comes with its request, for what
// the decision saw (Keyed's Quota).
func (e *engine) acquire(ctx context.Context, name string, o op, cost int64) (*request, error) {
	obs := e.cfg.obs
	if obs == nil || o != opAcquire {
		return e.decide(ctx, name, o, cost)
	}
	start := e.cfg.clock.Now()
	r, err := e.decide(ctx, name, o, cost)
	if err == nil {
		obs.Waited(e.cfg.clock.Now().Sub(start))
	}
	return r, err
}

// decide is acquire, unobserved.
func (e *engine) decide(ctx context.Context, name string, o op, cost int64) (*request, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := e.check(cost); err != nil {
		return nil, err
	}
	// permits.All asks without waiting, and its refusal is not a
	// caller's (see permits.Stats): a try, not counted when refused.
	probing := o == opAcquire && probe.Is(ctx)
	if probing {
		o = opTry
	}
	r := e.newRequest(ctx, name, o, cost)
	r.probe = probing
	// Only a caller that cannot be cancelled takes the direct path: one
	// making the script call itself cannot return before go-redis does.
	if ctx.Done() != nil || !e.direct(r) {
		e.send(r)
	}
	e.await(ctx, r)
	switch r.state.Load() {
	case rqCancelled:
		if r.status == stClosed {
			return nil, permits.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, context.Canceled
	}
	switch r.status {
	case stGranted:
		return r, nil
	case stLimited:
		return r, &permits.RateLimitError{RetryAfter: r.retry()}
	case stDeadline:
		return r, &permits.RateLimitError{RetryAfter: r.retry(), Cause: context.DeadlineExceeded}
	case stNever:
		return nil, permits.CostExceedsCapacity(cost, e.q.burst)
	case stUnavailable:
		return nil, r.err
	case stLocal:
		return nil, &fallBackError{cause: r.err}
	}
	return nil, permits.ErrClosed
}

// undecided is the status of a request Redis did not decide: fail
// closed, or fall open to the local limiter.
func (e *engine) undecided() status {
	if e.local != nil {
		return stLocal
	}
	return stUnavailable
}

// fallBackError tells acquire's callers to ask the local limiter instead;
// cause, an *UnavailableError, is why Redis did not decide.
type fallBackError struct{ cause error }

func (f *fallBackError) Error() string { return "redislimit: fall back to the local limiter" }

// fallBack asks the fail-open limiter instead. A cost above the local
// limiter's share of the burst fails with the cause, not with
// permits.ErrCostExceedsCapacity: Redis can admit it, and will once it
// answers again.
func (e *engine) fallBack(ctx context.Context, o op, cost int64, cause error) (permits.Permit, error) {
	var p permits.Permit
	var err error
	if o == opTry {
		p, err = e.local.TryAcquire(cost)
	} else {
		p, err = e.local.Acquire(ctx, cost)
	}
	if errors.Is(err, permits.ErrCostExceedsCapacity) {
		return p, cause
	}
	return p, err
}
