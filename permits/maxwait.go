package permits

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice/internal/probe"
)

// A wait bound per call: a job whose wait and whose call share one context
// is granted near its deadline and then times out mid-call. MaxWait and
// WithMaxWait bound the wait on its own, and leave the call its full
// context.

// Option configures Do.
type Option interface{ applyDo(*doConfig) }

type doConfig struct{ maxWait time.Duration }

type doOption func(*doConfig)

func (f doOption) applyDo(c *doConfig) { f(c) }

// WithMaxWait bounds how long Do waits for its permit, apart from ctx,
// which the call keeps whole. A wait that would take longer fails with a
// *RateLimitError (matching ErrRateLimited, and not context.DeadlineExceeded:
// ctx has not ended) before the call is made. d <= 0 means the permit must be
// free at once (a TryAcquire). A deadline of ctx's own that comes first
// keeps its meaning: its refusal matches context.DeadlineExceeded.
func WithMaxWait(d time.Duration) Option {
	return doOption(func(c *doConfig) { c.maxWait = max(d, 0) })
}

// MaxWait returns lim with every Acquire's wait bounded by d, apart from the
// caller's context, which the permit's holder keeps whole: a wait that would
// take longer fails with a *RateLimitError matching ErrRateLimited (and not
// context.DeadlineExceeded, unless the caller's own deadline came first);
// d <= 0 makes every Acquire a TryAcquire. TryAcquire is unchanged.
// Limiters that refund or settle keep doing so through it, so it can be a
// part of All, or wrap one: MaxWait(All(requests, tokens, pool), 2*time.Second).
func MaxWait(lim Limiter, d time.Duration) Limiter {
	m := maxWait{lim: lim, d: max(d, 0)}
	if s, ok := lim.(Settler); ok {
		return maxWaitSettler{maxWaitRefunder{m, s}, s}
	}
	if r, ok := lim.(Refunder); ok {
		return maxWaitRefunder{m, r}
	}
	return m
}

type maxWait struct {
	lim Limiter
	d   time.Duration
}

func (m maxWait) Acquire(ctx context.Context, cost int64) (Permit, error) {
	if m.d == 0 {
		// No wait at all: a context that is already done would fail even
		// a free permit, so ask without one.
		if err := ctx.Err(); err != nil {
			return Permit{}, err
		}
		return m.lim.TryAcquire(cost)
	}
	var p Permit
	err := bounded(ctx, m.d, func(ctx context.Context) (err error) {
		p, err = m.lim.Acquire(ctx, cost)
		return err
	}, func() (err error) {
		p, err = m.lim.TryAcquire(cost)
		return err
	})
	return p, err
}

func (m maxWait) TryAcquire(cost int64) (Permit, error) { return m.lim.TryAcquire(cost) }

type maxWaitRefunder struct {
	maxWait
	ref Refunder
}

func (m maxWaitRefunder) AcquireGrant(ctx context.Context, cost int64) (Grant, error) {
	if probe.Is(ctx) {
		return m.ref.AcquireGrant(ctx, cost) // it never waits: the bound changes nothing
	}
	if m.d == 0 {
		if err := ctx.Err(); err != nil {
			return Grant{}, err
		}
		return m.ref.TryAcquireGrant(cost)
	}
	var g Grant
	err := bounded(ctx, m.d, func(ctx context.Context) (err error) {
		g, err = m.ref.AcquireGrant(ctx, cost)
		return err
	}, func() (err error) {
		g, err = m.ref.TryAcquireGrant(cost)
		return err
	})
	return g, err
}

func (m maxWaitRefunder) TryAcquireGrant(cost int64) (Grant, error) {
	return m.ref.TryAcquireGrant(cost)
}

func (m maxWaitRefunder) Refund(g Grant) bool { return m.ref.Refund(g) }

// inner is the Refunder m bounds, for All (see answersProbe).
func (m maxWaitRefunder) inner() Refunder { return m.ref }

type maxWaitSettler struct {
	maxWaitRefunder
	s Settler
}

func (m maxWaitSettler) Settle(g Grant, actual int64) error { return m.s.Settle(g, actual) }

// bounded runs acquire with ctx bounded by d, and turns the end of that
// bound (not ctx's own) into a *RateLimitError. When the bound ended with
// no wait predicted, it asks once more without waiting (try): a bound of a
// few ns can end before the limiter looks, and a limiter fails a done
// context even when it has room. Asking only then, not first, keeps the
// wait cancellable and charges a part of All that cannot give back only
// once.
func bounded(ctx context.Context, d time.Duration, acquire func(context.Context) error, try func() error) error {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		// The caller's deadline comes first: the bound changes nothing, and
		// a refusal keeps saying that it was the deadline.
		return acquire(ctx)
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := acquire(wctx)
	if err == nil || ctx.Err() != nil || wctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
		return err // granted, the caller's own context ended, or another refusal
	}
	// The bound ended the wait, or the limiter saw at once that it would:
	// a refusal by the limit, with the RetryAfter the limiter predicted.
	if ra, ok := RetryAfter(err); ok {
		return &RateLimitError{RetryAfter: ra}
	}
	// A TryAcquire never passes a waiter: room free now is nobody's.
	if err = try(); err == nil || !errors.Is(err, ErrRateLimited) {
		return err
	}
	if ra, ok := RetryAfter(err); ok {
		return &RateLimitError{RetryAfter: ra}
	}
	return &RateLimitError{RetryAfter: 1}
}
