package redislimit

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// Limiter is a GCRA rate limit whose state lives in Redis, shared by every
// process that uses the same key, rate and burst. It has the semantics of
// actor.New(algorithms.NewGCRA(rate, burst)) in one process: waiters are
// granted in FIFO order (per process) at their scheduled instants, a cost
// above the burst fails at once and is never sent, a cancelled waiter
// gives its capacity back, and the errors are the same.
//
// Its owner goroutine sends the requests of every caller waiting at once
// as one script call, which decides them in order at Redis's clock and
// reserves capacity ahead for those that must wait; they wait locally, on
// the owner's one timer, and a waiter that gives up hands its reservation
// to the waiter behind it. While one call is under way the owner gathers
// the next. docs/distributed.md describes the protocol, the clock and each
// failure mode.
//
// A Limiter is safe for concurrent use. Close it when done: it owns two
// goroutines. Closing it does not close the Redis client.
type Limiter struct {
	e   *engine
	key string
}

// New returns a Limiter for the Redis key key, admitting rate with bursts
// of up to burst units, and starts its goroutines. client is the caller's
// go-redis client (a single node, Sentinel or Cluster client). Every
// process sharing key must use the same rate and burst. New fails, matching
// permits.ErrInvalidConfig, for a nil client, an empty key, an invalid
// rate or burst, one that Redis's integer arithmetic cannot keep exact,
// or invalid options. Nil options are ignored.
func New(client redis.UniversalClient, key string, rate algorithms.Rate, burst int64, opts ...Option) (*Limiter, error) {
	if key == "" {
		return nil, invalid("empty key")
	}
	q, err := newQuota(rate, burst)
	if err != nil {
		return nil, err
	}
	e, err := newEngine(client, q, nil, opts)
	if err != nil {
		return nil, err
	}
	e.keep, e.logKey = true, key
	return &Limiter{e: e, key: key}, nil
}

// Acquire waits until cost units are granted, in FIFO order among this
// process's callers, and returns a permit for them (Release is a no-op:
// rate capacity comes back with time).
//
// It fails at once, without sending anything, with ctx.Err() if ctx is
// already done, permits.ErrInvalidCost for cost < 1,
// permits.ErrCostExceedsCapacity for cost > burst, and permits.ErrClosed
// once the limiter is closed. It fails with a *permits.RateLimitError as
// soon as Redis answers when the reservation would come after ctx's
// deadline (the error then also matches context.DeadlineExceeded) or later
// than WithMaxWait allows. If ctx ends while it waits, it returns ctx.Err()
// and its reservation goes to the waiters behind it. When Redis cannot
// decide it fails with an error matching ErrUnavailable, or with
// WithFailOpen asks the local limiter instead.
func (l *Limiter) Acquire(ctx context.Context, cost int64) (permits.Permit, error) {
	g, err := l.e.acquireGrant(l, ctx, l.key, opAcquire, cost)
	return g.Permit, err
}

// TryAcquire returns a permit for cost units if Redis grants them now and
// nobody in this process is waiting for them; it never waits for capacity,
// only for Redis's answer. A refusal is a *permits.RateLimitError whose
// RetryAfter is exact, to the microsecond, when nobody in this process
// waits, and otherwise a lower bound: the wait behind the reservations
// this process holds.
func (l *Limiter) TryAcquire(cost int64) (permits.Permit, error) {
	g, err := l.e.acquireGrant(l, context.Background(), l.key, opTry, cost)
	return g.Permit, err
}

// AcquireGrant is Acquire, returning the permit as a Grant for Refund.
func (l *Limiter) AcquireGrant(ctx context.Context, cost int64) (permits.Grant, error) {
	return l.e.acquireGrant(l, ctx, l.key, opAcquire, cost)
}

// TryAcquireGrant is TryAcquire, returning the permit as a Grant for
// Refund.
func (l *Limiter) TryAcquireGrant(cost int64) (permits.Grant, error) {
	return l.e.acquireGrant(l, context.Background(), l.key, opTry, cost)
}

// acquireGrant is Acquire for the Redis key name, by issuer: the grant
// through Redis, or the fail-open limiter's.
func (e *engine) acquireGrant(issuer any, ctx context.Context, name string, o op, cost int64) (permits.Grant, error) {
	r, err := e.acquire(ctx, name, o, cost)
	if fb := (*fallBackError)(nil); errors.As(err, &fb) {
		p, err := e.fallBack(ctx, o, cost, fb.cause)
		return permits.Grant{Permit: p, At: e.cfg.clock.Now()}, err
	}
	if err != nil {
		return permits.Grant{}, err
	}
	g := e.grant(issuer, r)
	e.recycle(r)
	return g, nil
}

// Refund gives back a grant that was not used, if that is provably safe:
// only while the grant is the latest admission on the key, by any
// process, so that nothing was admitted behind it. The script then moves
// the TAT back by the grant's cost, but not before Redis's now: the part
// of the grant already in the past gives nothing back. Refund waits for
// Redis's answer and reports whether anything came back; a grant from
// another limiter, one granted by the fail-open limiter, one refunded
// before, or one that was not its call's latest admission (another
// request was admitted after it in the same call) gives back nothing.
func (l *Limiter) Refund(g permits.Grant) bool {
	mark, frac, seq, ok := g.Ticket(l)
	if !ok || seq < 1 || g.Cost() < 1 || g.Cost() > l.e.q.burst || l.e.closed.Load() {
		return false
	}
	r := l.e.newRequest(context.Background(), l.key, opRefund, g.Cost())
	r.refund = ident{w: mark.UnixMicro(), f: frac, n: seq, ok: true}
	l.e.roundTrip(context.Background(), r)
	return r.state.Load() == rqDone && r.status == stRefunded
}

// Close fails every waiting caller with permits.ErrClosed, makes every
// later call return it, and returns once the owner's goroutines have
// exited; a call under way is cancelled. A worker stuck inside go-redis on
// a hung server is waited for at most WithCallTimeout: it exits when
// go-redis gives its call back, and touches nothing of the limiter's but
// its own dropped answer. It is idempotent and always returns nil. It does
// not close the Redis client.
func (l *Limiter) Close() error {
	l.e.close()
	return nil
}

// Stats returns the limiter's counters.
func (l *Limiter) Stats() Stats { return l.e.stats() }

// Stats is a snapshot of a limiter's counters. Granted, Rejected,
// Canceled, Unavailable and FellOpen count requests and are updated before
// the call they count returns.
type Stats struct {
	// permits.Stats is the shape every limiter shares. Refunded counts the
	// Refunds that took something back and, for a Window, the Settles
	// applied.
	permits.Stats
	Unavailable uint64 // requests failed with an *UnavailableError
	FellOpen    uint64 // requests sent to the fail-open limiter

	Direct    uint64 // requests whose caller made the script call itself (direct.go)
	Calls     uint64 // script calls made (EVALSHA, and EVAL after NOSCRIPT)
	Decided   uint64 // requests those calls decided
	HandedOff uint64 // waiters granted a slot another waiter gave up, without a call
	GivenBack uint64 // units given back to Redis, nobody here able to use them
	Moved     uint64 // a Window's reservations moved earlier, room having come sooner
}

func (e *engine) stats() Stats {
	return Stats{
		Stats: permits.Stats{
			Granted: e.granted.Load(), Rejected: e.rejected.Load(), Refunded: e.refunded.Load(),
			Canceled: e.canceled.Load(), Waiting: int(e.waiting.Load()),
		},
		Unavailable: e.unavailable.Load(), FellOpen: e.fellOpen.Load(),
		Direct: e.directs.Load(), Calls: e.calls.Load(), Decided: e.decided.Load(), HandedOff: e.handedOff.Load(),
		GivenBack: e.givenBack.Load(), Moved: e.moves.Load(),
	}
}

// grant makes the Grant of a granted request, with the key's value after
// it when it was its call's latest admission (the only kind Refund can
// take back), for issuer.
func (e *engine) grant(issuer any, r *request) permits.Grant {
	at := e.epoch.Add(time.Duration(r.n))
	var mark time.Time
	var frac, seq int64
	if id := r.ticket; id.ok {
		mark, frac, seq = time.UnixMicro(id.w), id.f, id.n
	}
	return permits.NewGrant(permits.NewPermit(r.cost, nil, nil), at, r.waited, issuer, mark, frac, seq)
}

var (
	_ permits.Limiter  = (*Limiter)(nil)
	_ permits.Refunder = (*Limiter)(nil)
)
