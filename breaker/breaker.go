package breaker

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/window"
)

// Indexes of the rate-mode window's counters.
const (
	calls     = 0
	failures  = 1
	slowCalls = 2
)

// Breaker is a circuit breaker with three states (Closed, Open, HalfOpen)
// that trips on consecutive failures or, in rate mode, on the failure rate
// over a sliding window of ten time buckets. Most callers want Do; Allow is
// for calls whose outcome is known elsewhere (a stream, a callback).
// Snapshot tells an operator what it counts, and ForceOpen and Reset let
// one take over during an incident.
//
// The zero value is not usable: make one with New. A Breaker is safe for
// concurrent use. Its mutex is held for a fixed amount of work per call and
// never while running user code: fn, the classifier and the hook all run
// without it, so they may call the Breaker. Memory is constant whatever the
// traffic (see docs/resilience.md for the bytes: a rate window and a hook
// queue are allocated only for the breakers that use them). Do costs two
// uncontended lock round trips and no allocation; in count mode while Closed
// it does not read the clock at all, unless a slow-call threshold is set
// (see bench/ for the figures beside gobreaker). Allow allocates its done
// function (two small objects); a refusal allocates the *OpenError.
type Breaker struct {
	mu    sync.Mutex
	state State
	// forced holds the breaker open until Reset (ForceOpen).
	forced bool
	// gen is incremented on every transition and by Reset; outcomes carry
	// the gen they were admitted in, and an older one is stale.
	gen uint64

	// Closed, count mode: consecutive failures, and the outcomes since the
	// breaker closed, for Snapshot.
	consecutive              int
	nCalls, nFailed, nSlowed int64
	win                      *window.Window // Closed, rate mode; nil in count mode

	openUntil   time.Duration // Open: offset at which a probe is admitted
	openTimeout time.Duration // the current open timeout (grows with repeated trips)

	inflight  int           // HalfOpen: probes running
	successes int           // HalfOpen: probes that succeeded
	fullSince time.Duration // HalfOpen: when the probes took the last free slot

	lastTransition time.Duration // offset; meaningful when transitions > 0
	transitions    int64
	hook           *hookQueue // nil without a hook

	cfg    config
	origin time.Time        // creation instant; offsets and the window are relative to it
	clock  func() time.Time // nil means package time
}

// New returns a closed breaker configured by opts. It fails, matching
// ErrInvalidConfig, for a nil option or a setting outside its documented
// range.
func New(opts ...Option) (*Breaker, error) { return newBreaker(nil, opts) }

func newBreaker(clock func() time.Time, opts []Option) (*Breaker, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	b := &Breaker{cfg: c, clock: clock, openTimeout: c.openTimeout}
	if c.rateMode {
		w := window.New(c.window)
		b.win = &w
	}
	if c.deliver != nil {
		b.hook = new(hookQueue)
	}
	if clock != nil {
		b.origin = clock()
	} else {
		b.origin = time.Now()
	}
	return b, nil
}

// Name returns the name given with WithName, or "".
func (b *Breaker) Name() string { return b.cfg.name }

// The stages of a call, which tell the guard in Do what a panic interrupted.
const (
	stageHook  = iota // delivering the transition that admitted the call: fn has not run
	stageCall         // fn or the classifier is running
	stageSaved        // the outcome is recorded
)

// Do runs fn if the breaker admits it and records its outcome. It returns
// ctx.Err() without running fn if ctx is already done, an *OpenError
// (matching ErrOpen) without running fn if the breaker refuses the call, and
// otherwise what fn returned. A panic in fn counts as a failure and goes on
// up the stack unchanged; so does a panic in the classifier. A panic in the
// hook before fn runs frees the call's slot and goes on up without running
// fn. Do does not allocate, except in a delivery that reaches its third
// hook call, which offers the queue with a timer and a channel (see
// WithOnTransition).
func (b *Breaker) Do(ctx context.Context, fn func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	gen, deliver, err := b.acquire()
	if err != nil {
		if deliver {
			b.deliver()
		}
		return err
	}
	stage := stageHook
	defer func() {
		// No hook runs from here: the panic going up must stay the caller's.
		switch stage {
		case stageHook:
			b.recordQuietly(gen, Ignored, false)
		case stageCall: // fn, or the classifier, panicked or called runtime.Goexit
			b.recordQuietly(gen, Failure, false)
		}
	}()
	if deliver {
		b.deliver()
	}
	stage = stageCall
	var start time.Duration
	if b.cfg.slow > 0 {
		start = b.elapsed()
	}
	err = fn(ctx)
	slow := b.cfg.slow > 0 && b.elapsed()-start > b.cfg.slow
	o := b.classify(err, slow)
	stage = stageSaved
	if b.record(gen, o, slow) {
		b.deliver()
	}
	return err
}

// Allow asks to make a call. If the breaker refuses, it returns an
// *OpenError matching ErrOpen. Otherwise the caller makes the call and then
// reports its outcome by calling done with the call's error (nil for a
// success) exactly once; calls after the first are ignored. A probe whose
// done is never called keeps its slot until the half-open timeout reopens
// the breaker (WithHalfOpenTimeout). A panic in the classifier, called from
// done, counts the call as a failure and goes on up from done.
func (b *Breaker) Allow() (done func(err error), err error) {
	gen, deliver, err := b.acquire()
	if err != nil {
		if deliver {
			b.deliver()
		}
		return nil, err
	}
	if deliver {
		b.deliverAdmitted(gen)
	}
	var start time.Duration
	if b.cfg.slow > 0 {
		start = b.elapsed()
	}
	var called atomic.Bool
	return func(err error) {
		if called.CompareAndSwap(false, true) {
			b.finish(gen, err, start)
		}
	}, nil
}

// deliverAdmitted delivers for a call admitted in generation gen that has
// not started: if the hook panics, the call gives its slot back first.
func (b *Breaker) deliverAdmitted(gen uint64) {
	delivered := false
	defer func() {
		if !delivered {
			b.recordQuietly(gen, Ignored, false)
		}
	}()
	b.deliver()
	delivered = true
}

// finish classifies and records the outcome of a call that Allow admitted
// in generation gen at offset start; a panic in the classifier records a
// failure first.
func (b *Breaker) finish(gen uint64, err error, start time.Duration) {
	recorded := false
	defer func() {
		if !recorded {
			b.recordQuietly(gen, Failure, false)
		}
	}()
	slow := b.cfg.slow > 0 && b.elapsed()-start > b.cfg.slow
	o := b.classify(err, slow)
	recorded = true
	if b.record(gen, o, slow) {
		b.deliver()
	}
}

// State returns the current state. An open breaker whose timeout has elapsed
// becomes half-open here, as it would on the next call, and a half-open one
// whose probes have held every slot for the half-open timeout reopens.
func (b *Breaker) State() State {
	b.mu.Lock()
	if b.state != Closed {
		b.advance(b.elapsed())
	}
	s := b.state
	b.unlock()
	return s
}

// acquire admits a call and returns the generation it belongs to, or
// refuses it with an *OpenError; deliver reports that this goroutine now
// delivers the transitions waiting for the hook (claim), which it must do
// before running fn.
func (b *Breaker) acquire() (gen uint64, deliver bool, err error) {
	b.mu.Lock()
	if b.state == Closed { // the common case: no clock read
		gen, deliver = b.gen, b.claim()
		b.mu.Unlock()
		return gen, deliver, nil
	}
	now := b.elapsed()
	b.advance(now)
	if b.state == HalfOpen && b.inflight+b.successes < b.cfg.probes {
		// Admit a probe while fewer are in flight than may run at once, and
		// no more than the successes still needed to close.
		b.inflight++
		if b.inflight+b.successes == b.cfg.probes {
			b.fullSince = now
		}
		gen, deliver = b.gen, b.claim()
		b.mu.Unlock()
		return gen, deliver, nil
	}
	refusal := OpenError{Name: b.cfg.name, State: b.state, Forced: b.forced, RetryAfter: b.retryAfter(now)}
	deliver = b.claim()
	b.mu.Unlock()
	return 0, deliver, &refusal
}

// advance makes the transitions that time alone causes, as of offset now:
// Open to HalfOpen once the open timeout has passed (unless forced), and
// HalfOpen back to Open once the probes have held every slot for the
// half-open timeout. It requires b.mu held.
func (b *Breaker) advance(now time.Duration) {
	if b.state == Open && !b.forced && now >= b.openUntil {
		b.setState(HalfOpen, now)
	}
	if b.state == HalfOpen && b.inflight+b.successes >= b.cfg.probes &&
		b.inflight > 0 && since(now, b.fullSince) >= b.cfg.halfOpenTimeout {
		b.reopen(now) // the probes in flight become stale
	}
}

// retryAfter returns how long a call refused at offset now should wait. It
// requires b.mu held, the breaker refusing calls, and advance(now) done.
func (b *Breaker) retryAfter(now time.Duration) time.Duration {
	switch {
	case b.forced:
		return b.openTimeout
	case b.state == Open:
		return remaining(b.openUntil, now, b.openTimeout)
	}
	return remaining(satAdd(b.fullSince, b.cfg.halfOpenTimeout), now, b.cfg.halfOpenTimeout)
}

// record counts the outcome of a call admitted in generation gen, unless the
// breaker has changed state since, and reports whether this goroutine now
// delivers the transitions waiting for the hook (claim): it must then call
// deliver. slow reports that the call took longer than the slow-call
// threshold (o is then a Failure unless Ignored).
func (b *Breaker) record(gen uint64, o Outcome, slow bool) (deliver bool) {
	b.mu.Lock()
	b.count(gen, o, slow)
	deliver = b.claim()
	b.mu.Unlock()
	return deliver
}

// recordQuietly is record for a call on its way up with a panic: it claims
// no delivery, so that no hook runs and the panic the caller recovers stays
// the one that happened. What it queues waits for the next call.
func (b *Breaker) recordQuietly(gen uint64, o Outcome, slow bool) {
	b.mu.Lock()
	b.count(gen, o, slow)
	b.mu.Unlock()
}

// count is record's accounting. It requires b.mu held.
func (b *Breaker) count(gen uint64, o Outcome, slow bool) {
	if gen != b.gen {
		return
	}
	switch b.state {
	case Closed:
		b.recordClosed(o, slow)
	case HalfOpen:
		b.inflight--
		switch o {
		case Success:
			b.successes++
			if b.successes >= b.cfg.probes {
				b.setState(Closed, b.elapsed())
			}
		case Failure:
			b.reopen(b.elapsed())
		}
	}
}

// recordClosed counts an outcome while Closed and opens the breaker if the
// threshold is reached. It requires b.mu held.
func (b *Breaker) recordClosed(o Outcome, slow bool) {
	if o == Ignored {
		return
	}
	if b.win != nil {
		b.recordRate(o, slow)
		return
	}
	b.nCalls++
	if slow {
		b.nSlowed++
	}
	if o == Success {
		b.consecutive = 0
		return
	}
	b.nFailed++
	b.consecutive++
	if b.consecutive >= b.cfg.consecutive {
		b.setState(Open, b.elapsed())
	}
}

// recordRate counts an outcome in rate mode and opens the breaker if the
// rate is reached. It requires b.mu held and the breaker Closed.
func (b *Breaker) recordRate(o Outcome, slow bool) {
	now := b.elapsed()
	c := window.Counts{calls: 1}
	if o == Failure {
		c[failures] = 1
	}
	if slow {
		c[slowCalls] = 1
	}
	b.win.Add(now, c)
	t := b.win.RunningTotals()
	// Dividing exact integers rounds correctly, so 7 failures in 100 calls
	// reach a rate of 0.07; 7 >= 0.07*100 would not, since 0.07*100 is
	// 7.000000000000001 in floating point.
	if t[calls] >= int64(b.cfg.minCalls) && float64(t[failures])/float64(t[calls]) >= b.cfg.rate {
		b.setState(Open, now)
	}
}

// reopen moves a half-open breaker back to Open at offset now, for an open
// timeout grown by WithOpenTimeoutGrowth. It requires b.mu held.
func (b *Breaker) reopen(now time.Duration) {
	b.openTimeout = b.cfg.grow(b.openTimeout)
	b.setState(Open, now)
}

// setState moves to state to at offset now and queues the transition for
// the hook. It requires b.mu held.
func (b *Breaker) setState(to State, now time.Duration) {
	from := b.state
	b.state = to
	b.gen++
	b.transitions++
	b.lastTransition = now
	switch to {
	case Closed:
		b.clearCounts()
		b.openTimeout = b.cfg.openTimeout
	case Open:
		b.openUntil = satAdd(now, b.openTimeout)
	case HalfOpen:
		b.inflight, b.successes = 0, 0
	}
	b.queue(from, to, now)
}

// clearCounts starts a fresh closed spell's counting. It requires b.mu held.
func (b *Breaker) clearCounts() {
	b.consecutive = 0
	b.nCalls, b.nFailed, b.nSlowed = 0, 0, 0
	if b.win != nil {
		b.win.Reset()
	}
}

// elapsed returns the time since the breaker was made. time.Since reads only
// the monotonic clock, and follows the virtual clock in a synctest bubble.
func (b *Breaker) elapsed() time.Duration {
	if b.clock != nil {
		return b.clock().Sub(b.origin)
	}
	return time.Since(b.origin)
}

// satAdd returns a + d for d >= 0, saturating at the largest offset.
func satAdd(a, d time.Duration) time.Duration {
	if s := a + d; s >= a {
		return s
	}
	return math.MaxInt64
}

// since returns now - then, or 0 if now is not later (a clock that went
// backwards is time standing still), saturating at the largest duration.
func since(now, then time.Duration) time.Duration {
	if now <= then {
		return 0
	}
	if d := now - then; d > 0 {
		return d
	}
	return math.MaxInt64
}

// remaining returns the time from offset now until offset until as a
// RetryAfter: in [1ns, limit]. A clock that went backwards, or so far that
// the difference overflows, must neither stretch a wait past its limit nor
// make it zero or negative.
func remaining(until, now, limit time.Duration) time.Duration {
	if now >= until {
		return time.Nanosecond
	}
	if d := until - now; d > 0 && d <= limit {
		return d
	}
	return limit
}
