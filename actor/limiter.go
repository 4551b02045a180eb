package actor

import (
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/internal/probe"
	"github.com/sluicehq/sluice/internal/quota"
	"github.com/sluicehq/sluice/internal/sat"
	"github.com/sluicehq/sluice/permits"
)

// Limiter is a rate limiter owned by one goroutine. Callers send requests
// to its inbox; the owner decides with its algorithm and answers on each
// caller's own reply channel. Waiters are granted in strict FIFO order at
// their scheduled instants, one timer serving the whole queue; a cancelled
// waiter leaves the queue wherever it is and, since nothing was consumed
// before its grant, the waiters behind it are granted as if it had never
// queued.
//
// When nobody waits and the algorithm has a lock-free form (GCRA, the token
// and leaky buckets at every rate of up to 2^30 units per period, the fixed
// window below 2^41 units), TryAcquire, Allow and an Acquire that need not
// wait decide with one CAS on the algorithm's state word, without a message
// and without allocating. While anyone waits, Allow and TryAcquire refuse
// at once, without a message either, with a RetryAfter the owner publishes.
// The fast path never passes a request that reached the owner first.
//
// Lane splits the waiters by tenant: from the first lane on, waiters are
// granted by weighted fair queueing between lanes, with priorities, instead
// of in one FIFO (docs/fairness.md); the limiter's own requests are then a
// lane of weight 1. A limiter that never has a lane keeps its FIFO.
//
// An idle Limiter holds its goroutine and about 2 KB (measured in
// BenchmarkIdleLimiterBytes). A Limiter is safe for concurrent use. Close it
// when done: it owns a goroutine.
type Limiter struct {
	rt    *runtime
	rate  *ratePolicy
	gated algorithms.Gated
}

// New returns a Limiter that owns alg and starts its goroutine. alg must not
// be used by anything else afterwards. Nil options are ignored. A nil alg
// is an error matching permits.ErrInvalidConfig, and then no goroutine is
// started.
//
// The owner goroutine runs under runtime/pprof labels sluice.limiter (the
// name given with WithName) and sluice.algorithm, so a goroutine profile,
// and with GODEBUG=tracebacklabels=1 a goroutine dump or a goleak report of
// a limiter that was never closed, says which one it is.
func New(alg algorithms.Algorithm, opts ...Option) (*Limiter, error) {
	if alg == nil {
		return nil, configerr.Errorf("actor", "New needs an algorithm, got nil")
	}
	return newLimiter(alg, opts), nil
}

// MustNew is New for an algorithm known to be there (one an algorithms
// constructor just returned without error): it panics where New would
// return an error, as regexp.MustCompile does.
func MustNew(alg algorithms.Algorithm, opts ...Option) *Limiter {
	l, err := New(alg, opts...)
	if err != nil {
		panic(err)
	}
	return l
}

func newLimiter(alg algorithms.Algorithm, opts []Option) *Limiter {
	cfg := defaults()
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	p := &ratePolicy{alg: alg}
	p.gated, _ = alg.(algorithms.Gated)
	p.cloner, _ = alg.(algorithms.Cloner)
	p.cap.Store(alg.Capacity())
	p.win.Store(int64(quota.Window(alg)))
	l := &Limiter{rate: p, gated: p.gated}
	l.rt = newRuntime(cfg, p, pprof.Labels("sluice.limiter", cfg.name, "sluice.algorithm", algorithmName(alg)))
	p.epoch = l.rt.epoch
	return l
}

// algorithmName is alg's type without package path or pointer: "GCRA".
func algorithmName(alg algorithms.Algorithm) string {
	name := strings.TrimPrefix(fmt.Sprintf("%T", alg), "*")
	return strings.TrimPrefix(name, "algorithms.")
}

// Acquire waits until cost units are granted, in FIFO order, and returns a
// permit for them (Release is a no-op: rate capacity comes back with time).
//
// It fails at once, without queuing, with ctx.Err() if ctx is already done
// (even when capacity is free), with permits.ErrInvalidCost for cost < 1,
// permits.ErrCostExceedsCapacity for cost > the algorithm's capacity, and
// permits.ErrClosed once the limiter is closed. It fails at once with a
// *permits.RateLimitError when the predicted grant is later than ctx's
// deadline (the error then also matches context.DeadlineExceeded), later
// than WithMaxWait allows, or the queue is full (WithMaxQueue). When the
// algorithm cannot predict (it does not implement algorithms.Cloner), the
// wait of the head of the queue is the prediction, and a waiter whose
// WithMaxWait runs out while queued fails then. If ctx ends while it waits,
// it leaves the queue and returns ctx.Err(); if the grant and the
// cancellation race and the grant wins, it returns the permit and a nil
// error. Once the limiter has lanes, the prediction is a lower bound, as
// for a Lane (see Lane.Acquire).
func (l *Limiter) Acquire(ctx context.Context, cost int64) (permits.Permit, error) {
	return l.acquire(ctx, cost, nil)
}

// acquire is Acquire in lane ln (nil: the limiter's own requests).
func (l *Limiter) acquire(ctx context.Context, cost int64, ln *Lane) (permits.Permit, error) {
	if err := ctx.Err(); err != nil {
		return permits.Permit{}, err
	}
	if err := l.check(cost); err != nil {
		return permits.Permit{}, err
	}
	now, ok, _, decided := l.fast(cost)
	if ok {
		l.rt.grantedAtOnce()
		return permits.NewPermit(cost, nil, nil), nil
	}
	c := l.rt.newCallFor(ctx, opAcquire, cost, l.arrival(now, decided), false)
	c.lane = ln
	res := l.rt.roundTrip(ctx, c, l.prompt(c))
	l.rt.observe(res)
	return l.result(ctx, res, cost)
}

// AcquireGrant is Acquire, returning with the permit what Refund needs: the
// instant of the grant, whether it waited, and the algorithm's record of it.
// It allocates nothing.
func (l *Limiter) AcquireGrant(ctx context.Context, cost int64) (permits.Grant, error) {
	return l.acquireGrant(ctx, cost, nil)
}

func (l *Limiter) acquireGrant(ctx context.Context, cost int64, ln *Lane) (permits.Grant, error) {
	if err := ctx.Err(); err != nil {
		return permits.Grant{}, err
	}
	if err := l.check(cost); err != nil {
		return permits.Grant{}, err
	}
	d, now, decided := l.fastGrant(cost)
	if d.Allowed {
		l.rt.grantedAtOnce()
		return l.newGrant(cost, now, false, d.Receipt), nil
	}
	if probe.Is(ctx) {
		// permits.All asks without waiting, and its refusal is not a
		// caller's (see permits.Stats).
		return l.tryGrant(cost, ln, d, now, decided, false)
	}
	c := l.rt.newCallFor(ctx, opAcquire, cost, l.arrival(now, decided), true)
	c.lane = ln
	res := l.rt.roundTrip(ctx, c, l.prompt(c))
	l.rt.observe(res)
	return l.grant(ctx, res, cost)
}

// TryAcquire returns a permit for cost units if they are available now and
// nobody is waiting; it never waits. A refusal matches
// permits.ErrRateLimited, and permits.RetryAfter (or errors.As, which finds
// a *permits.RateLimitError in it) tells its RetryAfter: exact when nobody
// waits (the algorithm's RetryAt) and, while others wait, the time until the
// owner's prediction for a newcomer behind the queue's tail, counting the
// Acquires still in its inbox, given without asking the owner where it
// can be; with lanes, the time until every lane's queue could be empty
// (see Lane.TryAcquire).
func (l *Limiter) TryAcquire(cost int64) (permits.Permit, error) { return l.tryAcquire(cost, nil) }

func (l *Limiter) tryAcquire(cost int64, ln *Lane) (permits.Permit, error) {
	if err := l.check(cost); err != nil {
		return permits.Permit{}, err
	}
	if _, ok, wait, decided := l.fast(cost); decided {
		l.count(ok)
		if ok {
			return permits.NewPermit(cost, nil, nil), nil
		}
		return permits.Permit{}, permits.RetryLater(wait)
	}
	if wait, behind := l.behind(true); behind {
		return permits.Permit{}, permits.RetryLater(wait)
	}
	c := l.rt.newCallFor(context.Background(), opTry, cost, l.rt.arrivalStamp(), false)
	c.lane = ln
	return l.result(context.Background(), l.rt.roundTrip(context.Background(), c, true), cost)
}

// TryAcquireGrant is TryAcquire, returning the permit as a Grant for Refund.
func (l *Limiter) TryAcquireGrant(cost int64) (permits.Grant, error) {
	return l.tryAcquireGrant(cost, nil)
}

func (l *Limiter) tryAcquireGrant(cost int64, ln *Lane) (permits.Grant, error) {
	if err := l.check(cost); err != nil {
		return permits.Grant{}, err
	}
	d, now, decided := l.fastGrant(cost)
	return l.tryGrant(cost, ln, d, now, decided, true)
}

// tryGrant is TryAcquireGrant once the fast path has been tried (d, now,
// decided); count is false for a probe, whose refusal is not counted.
func (l *Limiter) tryGrant(cost int64, ln *Lane, d algorithms.Decision, now time.Time, decided, count bool) (permits.Grant, error) {
	if decided {
		if d.Allowed || count {
			l.count(d.Allowed)
		}
		if d.Allowed {
			return l.newGrant(cost, now, false, d.Receipt), nil
		}
		return permits.Grant{}, permits.RetryLater(d.RetryAt.Sub(now))
	}
	if wait, behind := l.behind(count); behind {
		return permits.Grant{}, permits.RetryLater(wait)
	}
	c := l.rt.newCallFor(context.Background(), opTry, cost, l.rt.arrivalStamp(), true)
	c.lane, c.probe = ln, !count
	return l.grant(context.Background(), l.rt.roundTrip(context.Background(), c, true), cost)
}

// Wait is Acquire(ctx, 1), for callers that need no permit.
func (l *Limiter) Wait(ctx context.Context) error {
	_, err := l.Acquire(ctx, 1)
	return err
}

// Allow reports whether TryAcquire(1) would have succeeded, and takes the
// unit if so. Unlike TryAcquire it builds no error for a refusal, so it
// allocates nothing either way, and while anyone waits it answers false
// without asking the owner.
func (l *Limiter) Allow() bool { return l.allow(nil) }

func (l *Limiter) allow(ln *Lane) bool {
	if l.rt.o.Closed() {
		return false
	}
	if _, ok, _, decided := l.fast(1); decided {
		l.count(ok)
		return ok
	}
	if l.waitersAhead() {
		return false
	}
	c := l.rt.newCallFor(context.Background(), opTry, 1, l.rt.arrivalStamp(), false)
	c.lane = ln
	return l.rt.roundTrip(context.Background(), c, true).status == stGranted
}

// fast decides on the algorithm's lock-free path. decided is false, and the
// clock not read, when the caller must ask the owner instead: the algorithm
// has no lock-free form (now: SetRate can change it), or the owner holds
// requests or waiters.
func (l *Limiter) fast(cost int64) (now time.Time, ok bool, wait time.Duration, decided bool) {
	if l.gated == nil || !l.rt.idle() || !l.gated.LockFree() {
		return time.Time{}, false, 0, false
	}
	now = l.rt.cfg.clock.Now()
	ok, wait, decided = l.gated.TryAdmitAt(now, cost)
	return now, ok, wait, decided
}

// fastGrant is fast with the whole decision, whose Receipt a Grant needs.
func (l *Limiter) fastGrant(cost int64) (d algorithms.Decision, now time.Time, decided bool) {
	if l.gated == nil || !l.rt.idle() || !l.gated.LockFree() {
		return algorithms.Decision{}, time.Time{}, false
	}
	now = l.rt.cfg.clock.Now()
	d, decided = l.gated.TryAllowAt(now, cost)
	return d, now, decided
}

// behind reports whether waiters are queued, and if so the RetryAfter for
// a newcomer, without asking the owner: the tail the owner published, plus
// the units of the Acquires still in the inbox, which it has not taken yet
// (a plain Acquire does not wake an owner asleep on its timer, so a queue
// can grow there unseen), each at the rate's interval. It reports false,
// so that the caller asks the owner, when that would not be honest: the
// owner published no tail, or its word is out of date, or the inbox holds
// requests it cannot count (lanes, a window that gives units back in
// steps, an algorithm it does not know). count says to count the refusal
// in Stats (false for a probe).
func (l *Limiter) behind(count bool) (time.Duration, bool) {
	if l.rt.state.Load() != stWaiting {
		return 0, false
	}
	var ahead int64
	if !l.rt.o.Empty() {
		per := l.rt.perUnit.Load()
		if per == 0 {
			return 0, false
		}
		// Read before the tail: an owner that takes them meanwhile
		// publishes a tail behind them, and the sum errs long, never short.
		ahead = sat.Times(l.rt.o.Queued(), per)
	}
	tail := l.rt.tail.Load()
	if tail == 0 {
		return 0, false // none published: ask the owner
	}
	wait := time.Duration(sat.After(tail, time.Duration(ahead)) - l.rt.stamp())
	if wait <= 0 {
		// The owner's word is out of date (its timer is due: the head's
		// turn, the end of a pause, and it has not run yet). Ask it.
		return 0, false
	}
	if count {
		l.rt.rejected.add(1)
	}
	return wait, true
}

// waitersAhead reports whether anyone waits, for Allow, which needs no
// RetryAfter and refuses behind them without asking the owner (unless the
// owner's word is out of date, as in behind; a tail of 0 is unknown, with
// waiters queued).
func (l *Limiter) waitersAhead() bool {
	if l.rt.state.Load() != stWaiting {
		return false
	}
	if t := l.rt.tail.Load(); t != 0 && t <= l.rt.stamp() {
		return false
	}
	l.rt.rejected.add(1)
	return true
}

// arrival is the caller's arrival stamp: the fast path's clock reading if it
// read one, else a fresh one (see runtime.arrivalStamp).
func (l *Limiter) arrival(now time.Time, read bool) int64 {
	if read {
		return int64(now.Sub(l.rt.epoch))
	}
	return l.rt.arrivalStamp()
}

// prompt reports whether an Acquire needs the owner's answer at once (a
// prediction against its deadline or a bound) rather than at the owner's
// next wake-up. With lanes every Acquire does: a newcomer may be granted
// before the head the owner's timer waits for.
func (l *Limiter) prompt(c *call) bool {
	return c.hasDL || l.rt.cfg.maxWait >= 0 || l.rt.cfg.maxQueue > 0 || l.rate.fair.Load()
}

// count records a fast-path decision in the stats.
func (l *Limiter) count(granted bool) {
	if granted {
		l.rt.granted.add(1)
	} else {
		l.rt.rejected.add(1)
	}
}

// Close fails every waiting caller with permits.ErrClosed, makes every later
// call return it, and returns once the owner's goroutine has exited. It is
// idempotent and always returns nil.
func (l *Limiter) Close() error {
	l.rt.close()
	return nil
}

// Stats is a snapshot of a limiter's counters: permits.Stats, the shape
// every limiter of sluice shares.
type Stats = permits.Stats

// Stats returns the counters, over the limiter and its lanes (see
// permits.Stats for what each counts).
func (l *Limiter) Stats() Stats { return l.rt.stats() }

func (r *runtime) stats() Stats {
	return Stats{
		Granted:  r.granted.load() + r.atOnce.load(),
		Rejected: r.rejected.load(),
		Refunded: r.refunded.load(),
		Canceled: r.canceled.load(),
		Waiting:  int(r.waiting.Load()),
	}
}

// idle reports whether the owner holds nothing, so that the fast path may
// decide. The inbox is read before the state (internal/owner/inbox.go).
func (r *runtime) idle() bool { return r.o.Empty() && r.state.Load() == stIdle }

// A Limiter and a Lane answer permits.All's probes (internal/probe).
func init() {
	probe.Register((*Limiter)(nil))
	probe.Register((*Lane)(nil))
}

var (
	_ permits.Limiter  = (*Limiter)(nil)
	_ permits.Refunder = (*Limiter)(nil)
)

func (l *Limiter) check(cost int64) error { return l.rt.check(cost, l.rate.cap.Load()) }

// result maps a round trip's answer to the API.
func (l *Limiter) result(ctx context.Context, res result, cost int64) (permits.Permit, error) {
	switch res.status {
	case stGranted:
		return permits.NewPermit(cost, nil, nil), nil
	case stLimited:
		return permits.Permit{}, &permits.RateLimitError{RetryAfter: res.retry}
	case stDeadline:
		return permits.Permit{}, &permits.RateLimitError{RetryAfter: res.retry, Cause: context.DeadlineExceeded}
	case stTooLarge:
		return permits.Permit{}, permits.CostExceedsCapacity(cost, int64(res.retry))
	}
	return permits.Permit{}, res.ended(ctx)
}

func (l *Limiter) grant(ctx context.Context, res result, cost int64) (permits.Grant, error) {
	if _, err := l.result(ctx, res, cost); err != nil {
		return permits.Grant{}, err
	}
	return l.newGrant(cost, l.rt.epoch.Add(time.Duration(res.at)), res.waited, res.rc), nil
}

// newGrant makes the Grant of an admission decided for the instant at; its
// At is the instant the algorithm admitted it at, which is later when the
// algorithm had already seen a later one.
func (l *Limiter) newGrant(cost int64, at time.Time, waited bool, rc algorithms.Receipt) permits.Grant {
	if rc.At.After(at) {
		at = rc.At
	}
	return permits.NewGrant(permits.NewPermit(cost, nil, nil), at, waited, l, rc.Mark, rc.Frac, rc.Seq)
}
