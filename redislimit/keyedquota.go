package redislimit

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/sluicehq/sluice/permits"
)

// AcquireQuota is Acquire, with key's Quota as of the grant, or of the
// refusal for an error matching permits.ErrRateLimited (see
// TryAcquireQuota).
func (k *Keyed) AcquireQuota(ctx context.Context, key string, cost int64) (permits.Permit, permits.Quota, error) {
	return k.acquireQuota(ctx, key, opAcquire, cost)
}

// TryAcquireQuota is TryAcquire, with key's Quota as of the decision, as
// every process sharing the key sees it: Remaining and Reset come from the
// TAT the script answered with (after every admission of the call that
// decided, by any process), at the instant of Redis's clock it decided at,
// so two servers behind a load balancer send a client the same count.
// Window is the burst's span. A decision made without asking Redis (a
// TryAcquire behind this process's own waiters) reports Remaining 0 and
// Reset equal to RetryAfter, as keyed.Limiter does; other errors set only
// Limit. The Quota costs no more than the decision: no call of its own.
// Keyed implements permits.KeyedQuotaLimiter, so httplimit.Middleware
// sends the RateLimit fields over it.
func (k *Keyed) TryAcquireQuota(key string, cost int64) (permits.Permit, permits.Quota, error) {
	return k.acquireQuota(context.Background(), key, opTry, cost)
}

func (k *Keyed) acquireQuota(ctx context.Context, key string, o op, cost int64) (permits.Permit, permits.Quota, error) {
	r, err := k.e.acquire(ctx, k.RedisKey(key), o, cost)
	q := permits.Quota{Limit: k.e.q.burst, Window: k.e.q.span(k.e.q.tau)}
	switch {
	case err == nil:
		k.e.q.fill(&q, r.seen)
		p := permits.NewPermit(r.cost, nil, nil)
		k.e.recycle(r)
		return p, q, nil
	case r != nil && errors.Is(err, permits.ErrRateLimited):
		q.RetryAfter = r.retry()
		k.e.q.fill(&q, r.seen)
		q.Reset = max(q.Reset, q.RetryAfter)
	}
	return permits.Permit{}, q, err
}

// saw records what a GCRA's decision for r, made at Redis instant at
// (µs), knew of its key, before r is answered.
func (e *engine) saw(r *request, ks *keyState, at int64) {
	if e.win == nil && ks.tat.w > 0 {
		r.seen = seen{tat: ks.tat, at: at}
	}
}

// fill sets q's Remaining and Reset from what a decision saw: the units
// whose emission intervals fit between the TAT and the decision's instant
// plus the burst's span, and the time until the TAT. Unknown (at 0), the
// key counts as used up until RetryAfter, as behind waiters.
func (qu quota) fill(q *permits.Quota, s seen) {
	if s.at == 0 {
		q.Remaining, q.Reset = 0, q.RetryAfter
		return
	}
	now := pair{w: s.at}
	tat := s.tat
	if tat.w < now.w {
		tat = now // idle since: full
	}
	// free ≤ tau, whose ticks stay below 2^53 (newQuota): no overflow.
	free := now.add(qu.tau, qu.c).sub(tat, qu.c)
	if free.w >= 0 {
		q.Remaining = min((free.w*qu.c+free.f)/qu.p, qu.burst)
	}
	q.Reset = qu.span(tat.sub(now, qu.c))
}

// span is d, µs and ticks, as a Duration rounded up to the nanosecond.
// Precondition: d.w is below 2^53 and d.f below c.
func (qu quota) span(d pair) time.Duration {
	if d.w < 0 {
		return 0
	}
	if d.w >= math.MaxInt64/1000-1 {
		return math.MaxInt64 // a reservation centuries ahead
	}
	ns := d.w * 1000
	if d.f > 0 {
		ns += (d.f*1000 + qu.c - 1) / qu.c
	}
	return time.Duration(ns)
}

var _ permits.KeyedQuotaLimiter[string] = (*Keyed)(nil)
