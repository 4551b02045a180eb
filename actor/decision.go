package actor

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/quota"
	"github.com/sluicehq/sluice/permits"
)

// TryAcquireQuota is TryAcquire, returning with the permit or the refusal
// the Quota as of the decision: the limit, what remains, when the limit is
// full again and, on a refusal, the RetryAfter; what a server puts in the
// RateLimit and Retry-After fields of its response.
//
// When nobody waits and the algorithm has a lock-free form it is exact and
// costs what the fast path of TryAcquire costs plus the decision's
// Remaining and ResetAt. While others wait it refuses at once with
// Remaining 0 and the RetryAfter the owner published. When the decision
// has to go to the owner (an algorithm without a lock-free form, or
// requests the owner has not yet decided), the owner's answer carries the
// decision's Remaining and ResetAt too, exact as well.
//
// For an invalid cost or a closed limiter the error is TryAcquire's and
// only the Quota's Limit is set.
func (l *Limiter) TryAcquireQuota(cost int64) (permits.Permit, permits.Quota, error) {
	if err := l.check(cost); err != nil {
		return permits.Permit{}, permits.Quota{Limit: l.rate.cap.Load()}, err
	}
	if d, now, decided := l.fastGrant(cost); decided {
		l.count(d.Allowed)
		q := quota.Of(l.rate.alg, d, now)
		if d.Allowed {
			return permits.NewPermit(cost, nil, nil), q, nil
		}
		return permits.Permit{}, q, permits.RetryLater(q.RetryAfter)
	}
	if wait, behind := l.behind(true); behind {
		q := permits.Quota{Limit: l.rate.cap.Load(), Reset: wait, RetryAfter: wait, Window: time.Duration(l.rate.win.Load())}
		return permits.Permit{}, q, permits.RetryLater(wait)
	}
	now := l.rt.stamp()
	c := l.rt.newCallFor(context.Background(), opTry, cost, now, false)
	c.wantQuota = true
	x := c.ext()
	x.remaining, x.reset = -1, 0
	res := l.rt.roundTrip(context.Background(), c, true)
	p, err := l.result(context.Background(), res, cost)
	q := permits.Quota{Limit: l.rate.cap.Load(), Remaining: -1, Window: time.Duration(l.rate.win.Load())}
	if res.status == stGranted || res.status == stLimited {
		q.Remaining, q.Reset = res.remaining, max(time.Duration(res.reset-now), 0)
	}
	if wait, ok := permits.RetryAfter(err); ok {
		q.RetryAfter, q.Reset = wait, max(q.Reset, wait)
	}
	return p, q, err
}

var _ permits.QuotaLimiter = (*Limiter)(nil)
