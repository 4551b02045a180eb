package actor

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// Limiter is a rate limiter owned by one goroutine. Callers send requests
// on its mailbox; the owner decides with its algorithm and answers on each
// caller's own reply channel. Waiters are granted in strict FIFO order at
// their scheduled instants, one timer serving the whole queue; a cancelled
// waiter leaves the queue wherever it is and, since nothing was consumed
// before its grant, the waiters behind it are granted as if it had never
// queued.
//
// When nobody waits and the algorithm is a GCRA whose emission interval is a
// whole number of nanoseconds, TryAcquire, Allow and an Acquire that need not
// wait decide with one CAS on the GCRA's state word, without a message. The
// owner closes that fast path, in the same atomic step as the denial that
// queues the first waiter, so the fast path never passes a waiter.
//
// A Limiter is safe for concurrent use. Close it when done: it owns a
// goroutine.
type Limiter struct {
	rt       *runtime
	rate     *ratePolicy
	gated    algorithms.Gated
	lockFree bool // gated has a lock-free form: the fast path is worth a clock read
	cap      int64
}

// New returns a Limiter that owns alg and starts its goroutine. alg must not
// be used by anything else afterwards. New panics if alg is nil.
func New(alg algorithms.Algorithm, opts ...Option) *Limiter {
	if alg == nil {
		panic("actor: New with a nil algorithm")
	}
	cfg := defaults()
	for _, o := range opts {
		o.apply(&cfg)
	}
	p := &ratePolicy{alg: alg}
	p.gated, _ = alg.(algorithms.Gated)
	p.cloner, _ = alg.(algorithms.Cloner)
	l := &Limiter{rate: p, gated: p.gated, lockFree: p.gated != nil && p.gated.LockFree(), cap: alg.Capacity()}
	l.rt = newRuntime(cfg, p)
	p.epoch = l.rt.epoch
	return l
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
// than WithMaxWait allows, or the queue is full (WithMaxQueue). If ctx ends
// while it waits, it leaves the queue and returns ctx.Err(); if the grant
// and the cancellation race and the grant wins, it returns the permit and
// a nil error.
func (l *Limiter) Acquire(ctx context.Context, cost int64) (permits.Permit, error) {
	g, err := l.AcquireGrant(ctx, cost)
	return g.Permit, err
}

// TryAcquire returns a permit for cost units if they are available now and
// nobody is waiting; it never waits. A refusal is a *permits.RateLimitError
// whose RetryAfter is exact when nobody waits (the algorithm's RetryAt) and
// the predicted wait behind the queue otherwise.
func (l *Limiter) TryAcquire(cost int64) (permits.Permit, error) {
	g, err := l.TryAcquireGrant(cost)
	return g.Permit, err
}

// Wait is Acquire(ctx, 1), for callers that need no permit.
func (l *Limiter) Wait(ctx context.Context) error {
	_, err := l.Acquire(ctx, 1)
	return err
}

// Allow reports whether TryAcquire(1) would have succeeded, and takes the
// unit if so. Unlike TryAcquire it builds no error for a refusal, so it
// allocates nothing either way.
func (l *Limiter) Allow() bool {
	if l.rt.closed.Load() {
		return false
	}
	if _, ok, _, decided := l.fast(1); decided {
		l.count(ok)
		return ok
	}
	return l.rt.roundTrip(context.Background(), opTry, 1).status == stGranted
}

// fast decides on GCRA's lock-free path. decided is false, and the clock
// not read, when the caller must ask the owner instead: the algorithm has
// no lock-free form, or there are waiters (busy), so the gate is closed.
func (l *Limiter) fast(cost int64) (now time.Time, ok bool, wait time.Duration, decided bool) {
	if !l.lockFree || l.rt.busy.Load() {
		return time.Time{}, false, 0, false
	}
	now = l.rt.cfg.clock.Now()
	ok, wait, decided = l.gated.TryAdmitAt(now, cost)
	return now, ok, wait, decided
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

// Stats is a snapshot of a limiter's counters.
type Stats struct {
	Granted, Rejected, Canceled uint64 // since New
	Waiting                     int    // queued now
}

// Stats returns the counters. Granted counts permits, Rejected refusals by
// the limit (*permits.RateLimitError), Canceled waiters whose context ended
// while queued.
func (l *Limiter) Stats() Stats { return l.rt.stats() }

func (r *runtime) stats() Stats {
	return Stats{
		Granted:  r.granted.load(),
		Rejected: r.rejected.load(),
		Canceled: r.canceled.load(),
		Waiting:  int(r.waiting.Load() + r.lateN.Load()),
	}
}

var _ permits.Limiter = (*Limiter)(nil)

func (l *Limiter) check(cost int64) error { return l.rt.check(cost, l.cap) }

// result maps a round trip's answer to the API.
func (l *Limiter) result(ctx context.Context, res result, cost int64) (permits.Permit, error) {
	switch res.status {
	case stGranted:
		return permits.NewPermit(cost, nil, nil), nil
	case stLimited:
		return permits.Permit{}, &permits.RateLimitError{RetryAfter: res.retry}
	case stDeadline:
		return permits.Permit{}, &permits.RateLimitError{RetryAfter: res.retry, Cause: context.DeadlineExceeded}
	}
	return permits.Permit{}, res.ended(ctx)
}
