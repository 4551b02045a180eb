package actor

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// Limiter implements permits.Refunder, so that permits.All can give back the
// rate grants of a combined request that failed.
var _ permits.Refunder = (*Limiter)(nil)

// AcquireGrant is Acquire, returning with the permit the instant of the
// grant and whether it waited, which Refund needs. Acquire is this, less
// the Grant's extra fields. It allocates nothing.
func (l *Limiter) AcquireGrant(ctx context.Context, cost int64) (permits.Grant, error) {
	if err := ctx.Err(); err != nil {
		return permits.Grant{}, err
	}
	if err := l.check(cost); err != nil {
		return permits.Grant{}, err
	}
	if now, ok, _, _ := l.fast(cost); ok { // a denial waits with the owner
		l.rt.granted.add(1)
		return permits.Grant{Permit: permits.NewPermit(cost, nil, nil), At: now}, nil
	}
	return l.grant(ctx, l.rt.roundTrip(ctx, opAcquire, cost), cost)
}

// TryAcquireGrant is TryAcquire, returning the permit as a Grant for
// Refund. TryAcquire is this, less the Grant's extra fields.
func (l *Limiter) TryAcquireGrant(cost int64) (permits.Grant, error) {
	if err := l.check(cost); err != nil {
		return permits.Grant{}, err
	}
	if now, ok, wait, decided := l.fast(cost); decided {
		l.count(ok)
		if ok {
			return permits.Grant{Permit: permits.NewPermit(cost, nil, nil), At: now}, nil
		}
		return permits.Grant{}, &permits.RateLimitError{RetryAfter: max(wait, 1)}
	}
	return l.grant(context.Background(), l.rt.roundTrip(context.Background(), opTry, cost), cost)
}

func (l *Limiter) grant(ctx context.Context, res result, cost int64) (permits.Grant, error) {
	p, err := l.result(ctx, res, cost)
	if err != nil {
		return permits.Grant{}, err
	}
	return permits.Grant{Permit: p, At: l.rt.epoch.Add(time.Duration(res.at)), Waited: res.waited}, nil
}

// Refund gives back a grant that was not used: the owner applies its
// algorithm's RefundAt (package algorithms says, for each algorithm, what
// comes back) at the instant it handles the refund, and the waiters it lets
// in are granted at once. The waiter at the head of the queue keeps the
// instant it was already scheduled for; the ones behind it gain. Refund
// waits for the owner, so a TryAcquire after it sees the capacity. It
// reports false, changing nothing, when the limiter is closed or its
// algorithm does not implement algorithms.Refunder. Call it at most once
// per grant.
func (l *Limiter) Refund(g permits.Grant) bool {
	if g.Cost() < 1 || g.Cost() > l.cap {
		return false
	}
	if _, ok := l.rate.alg.(algorithms.Refunder); !ok {
		return false
	}
	r := l.rt
	c := r.calls.Get().(*call)
	if !r.post(request{op: opRefund, cost: g.Cost(), at: int64(g.At.Sub(r.epoch)), c: c}) {
		r.calls.Put(c)
		return false
	}
	// As in roundTrip: once closed is seen false after the send, the
	// request is ahead of the close message and will be answered.
	var done <-chan struct{}
	if r.closed.Load() {
		done = r.done
	}
	select {
	case <-c.reply:
		ok := c.status == stGranted
		r.calls.Put(c)
		return ok
	case <-done:
		return false // the call may still be in the mailbox: not reused
	}
}

// refund applies a refund on the owner: the algorithm takes the grant back,
// and the shadow used for predictions no longer matches the state.
func (p *ratePolicy) refund(now, at, cost int64) {
	if r, ok := p.alg.(algorithms.Refunder); ok {
		r.RefundAt(p.t(now), p.t(at), cost)
		p.removed()
	}
}
