package owner

import (
	"context"
	"fmt"
	"runtime/pprof"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// req is a test plug-in's call.
type req struct {
	Call[*req]
	name string
}

func newReq(name string) *req {
	r := &req{name: name}
	r.Init(r)
	return r
}

// pool is a plug-in that grants units while it has them and queues the
// rest in FIFO; a poke gives one unit back. It logs every step.
type pool struct {
	epoch time.Time
	units int
	q     []*Call[*req]
	wake  int64         // what Schedule returns as the instant to wake at
	gate  chan struct{} // if set, Handle waits for it first
	mu    sync.Mutex
	log   []string
}

func (p *pool) note(f string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = append(p.log, fmt.Sprintf(f, a...))
}

func (p *pool) steps() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

func (p *pool) now() int64 { return int64(time.Since(p.epoch)) }

func (p *pool) Wake(poked bool) int64 {
	if poked {
		p.units++
		p.note("poked")
	}
	return p.now()
}

func (p *pool) Cancel(c *Call[*req], at, _ int64) {
	for i, w := range p.q {
		if w == c {
			p.q = append(p.q[:i], p.q[i+1:]...)
			p.note("cancel %s", c.Self.name)
			c.Status = Canceled
			c.Signal()
			return
		}
	}
	p.note("ack %s", c.Self.name)
	c.Signal()
}

func (p *pool) Handle(c *Call[*req], _ int64) {
	if p.gate != nil {
		<-p.gate
	}
	if len(p.q) == 0 && p.units > 0 {
		p.units--
		p.note("grant %s", c.Self.name)
		c.Status = Granted
		c.Signal()
		return
	}
	p.note("queue %s", c.Self.name)
	p.q = append(p.q, c)
}

func (p *pool) Schedule(now int64) (int64, int64) {
	for len(p.q) > 0 && p.units > 0 {
		c := p.q[0]
		p.q = p.q[1:]
		p.units--
		p.note("grant %s", c.Self.name)
		c.Status = Granted
		c.Signal()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := p.now(); p.wake > now {
		return p.wake, now
	}
	return 0, p.now() // the instant passed: nothing timed is left
}

func (p *pool) Shutdown(left *Call[*req]) {
	for _, c := range p.q {
		c.Status = Closed
		c.Signal()
	}
	p.q = nil
	for c := left; c != nil; {
		next := c.Next()
		p.note("closed %s", c.Self.name)
		c.Status = Closed
		c.Signal()
		c = next
	}
}

func newOwner(p *pool) *Owner[*req] {
	o := new(Owner[*req])
	o.Init(p.now, func(d time.Duration) Timer { return timer{time.NewTimer(d)} })
	return o
}

type timer struct{ *time.Timer }

func (t timer) C() <-chan time.Time { return t.Timer.C }

// One batch serves its cancellations before its arrivals, in arrival
// order, and a request whose cancellation came in the same batch in its
// order, with its cancellation right after it. Driven by hand: the owner is not running.
func TestABatchServesCancellationsFirstThenArrivalsInOrder(t *testing.T) {
	p := &pool{epoch: time.Now()}
	o := newOwner(p)
	w := newReq("w")
	o.Send(&w.Call, true)
	o.batch(p, nil, takeArrivals(o), 0) // w waits: no unit
	a, b, c := newReq("a"), newReq("b"), newReq("c")
	for _, r := range []*req{a, b, c} {
		o.Send(&r.Call, true)
	}
	o.sendCancel(&b.Call) // b gives up before the owner saw it
	o.sendCancel(&w.Call) // w gives up while it waits
	cancels, arrivals := o.take()
	p.units = 1 // w's unit, back when w leaves
	o.batch(p, cancels, arrivals, 0)
	// Judged before w's cancellation, a would have queued behind w; b is
	// judged in its order and cancelled right after.
	assert.Equal(t, []string{"queue w", "cancel w", "grant a", "queue b", "cancel b", "queue c"}, p.steps())
	assert.Equal(t, []Status{Canceled, Granted, Canceled, Pending}, []Status{w.Status, a.Status, b.Status, c.Status})
}

func takeArrivals(o *Owner[*req]) *Call[*req] {
	_, a := o.take()
	return a
}

// A round trip whose context ends while it waits is taken back by the
// owner and answered Canceled; the call may be reused.
func TestARoundTripCancelledWhileWaitingIsTakenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &pool{epoch: time.Now()}
		o := newOwner(p)
		o.Start(pprof.Labels(), p)
		defer func() { o.Stop(); <-o.Done() }()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r := newReq("r")
		assert.Equal(t, Answered, o.RoundTrip(ctx, &r.Call, true))
		assert.Equal(t, Canceled, r.Status)
		assert.Equal(t, []string{"queue r", "cancel r"}, p.steps())
	})
}

// A grant that races the cancellation is the caller's answer, and the
// call is reused only once the cancellation is acknowledged too.
func TestAGrantThatRacesTheCancellationIsAcknowledgedAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &pool{epoch: time.Now(), units: 1, gate: make(chan struct{})}
		o := newOwner(p)
		o.Start(pprof.Labels(), p)
		defer func() { o.Stop(); <-o.Done() }()
		r := newReq("r")
		ctx, cancel := context.WithCancel(context.Background())
		out := make(chan Outcome)
		go func() { out <- o.RoundTrip(ctx, &r.Call, true) }()
		synctest.Wait() // the owner holds r, undecided
		cancel()
		synctest.Wait() // the cancellation is sent
		close(p.gate)   // r is granted: the answer raced the cancellation
		assert.Equal(t, Answered, <-out)
		synctest.Wait()
		assert.Equal(t, Granted, r.Status)
		assert.Equal(t, []string{"grant r", "ack r"}, p.steps())
		assert.Equal(t, 0, len(r.Reply), "both signals taken: the call is clean to reuse")
	})
}

// Stop answers every waiter and everything left in the inbox with Closed,
// ends the goroutine, and a round trip after it is answered too.
func TestStopAnswersEverythingItHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &pool{epoch: time.Now()}
		o := newOwner(p)
		o.Start(pprof.Labels(), p)
		var wg sync.WaitGroup
		out := make([]Outcome, 3)
		reqs := []*req{newReq("a"), newReq("b"), newReq("c")}
		for i, r := range reqs {
			wg.Go(func() { out[i] = o.RoundTrip(context.Background(), &r.Call, true) })
			synctest.Wait()
		}
		o.Stop()
		o.Stop() // idempotent
		<-o.Done()
		wg.Wait()
		for i, r := range reqs {
			assert.Equal(t, Closed, r.Status, r.name)
			assert.Equal(t, Answered, out[i], r.name)
		}
		late := newReq("late")
		assert.Equal(t, Unanswered, o.RoundTrip(context.Background(), &late.Call, true))
		assert.Equal(t, Closed, late.Status)
	})
}

// An arrival that needs no prompt answer does not wake an owner asleep on
// its timer; it is served when the timer fires. A prompt one wakes it.
func TestOnlyAPromptArrivalWakesAnOwnerAsleepOnItsTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		p := &pool{epoch: t0, units: 2, wake: int64(time.Second)}
		o := newOwner(p)
		o.Start(pprof.Labels(), p)
		defer func() { o.Stop(); <-o.Done() }()
		o.Poke() // a first wake-up arms the timer for 1s
		synctest.Wait()
		woken := o.Wakes()
		at := make(chan time.Duration, 1)
		lazy := newReq("lazy")
		go func() {
			o.RoundTrip(context.Background(), &lazy.Call, false)
			at <- time.Since(t0)
		}()
		synctest.Wait()
		assert.Equal(t, woken, o.Wakes(), "a lazy arrival left the owner asleep")
		assert.Equal(t, time.Second, <-at, "served when the timer fired")
		p.mu.Lock()
		p.wake = 0
		p.mu.Unlock()
		prompt := newReq("prompt")
		before := o.Wakes()
		o.RoundTrip(context.Background(), &prompt.Call, true)
		assert.Greater(t, o.Wakes(), before)
		assert.Equal(t, Granted, prompt.Status)
	})
}

// A poke reaches the plug-in's next Wake even when nothing is in the
// inbox, and is cleared before it decides.
func TestAPokeWakesTheOwnerOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &pool{epoch: time.Now()}
		o := newOwner(p)
		o.Start(pprof.Labels(), p)
		defer func() { o.Stop(); <-o.Done() }()
		w := newReq("w")
		done := make(chan struct{})
		go func() { o.RoundTrip(context.Background(), &w.Call, true); close(done) }()
		synctest.Wait()
		o.Poke()
		<-done
		synctest.Wait()
		assert.Equal(t, []string{"queue w", "poked", "grant w"}, p.steps())
		assert.False(t, o.Pending())
	})
}

// The timer is armed for the instant Schedule returns, from its reading:
// the owner wakes exactly then.
func TestTheTimerIsArmedFromScheduleReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		p := &pool{epoch: t0, wake: int64(250 * time.Millisecond)}
		o := newOwner(p)
		var wakes []time.Duration
		var mu sync.Mutex
		o.SetParkHook(func() { mu.Lock(); wakes = append(wakes, time.Since(t0)); mu.Unlock() })
		o.Start(pprof.Labels(), p)
		defer func() { o.Stop(); <-o.Done() }()
		synctest.Wait()
		o.Poke() // a wake-up, whose Schedule asks for 250ms
		time.Sleep(time.Second)
		mu.Lock()
		defer mu.Unlock()
		// Parks: at the start, after the poke, and after the timer's
		// wake-up at 250ms, which armed nothing more.
		assert.Equal(t, []time.Duration{0, 0, 250 * time.Millisecond}, wakes)
	})
}

// The inbox counts the Units of the requests it holds until the owner
// takes them: what a prediction must add for requests the owner has not
// seen.
func TestQueuedCountsTheUnitsTheOwnerHasNotTaken(t *testing.T) {
	p := &pool{epoch: time.Now()}
	o := newOwner(p)
	a, b, try := newReq("a"), newReq("b"), newReq("try")
	a.Units, b.Units = 2, 3 // try queues for nothing
	for _, r := range []*req{a, b, try} {
		o.Send(&r.Call, false)
	}
	assert.Equal(t, int64(5), o.Queued())
	_, arrivals := o.take()
	assert.Equal(t, int64(0), o.Queued(), "taken: the owner counts them now")
	assert.Equal(t, &a.Call, arrivals)
}
