package actor

import (
	"context"
	"fmt"
	"runtime/pprof"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/scheduler"
)

// Pool is a weighted concurrency limiter: at most Size cost units are held
// at once, each from Acquire until its permit's Release. It is the
// concurrency half of a quota (requests in flight, connections, memory),
// where Limiter is the rate half; both satisfy permits.Limiter and combine
// with permits.All.
//
// A Pool is owned by one goroutine, like a Limiter, and waiters are served
// in strict FIFO order: a large request at the head holds back smaller ones
// behind it, however much capacity they would find, so that no request
// starves (the reasoning is scheduler.Queue's). A waiter whose context ends
// leaves the queue wherever it is; since a waiter holds nothing, the
// capacity it would have taken goes to the waiters behind it.
//
// When nobody waits, Acquire, TryAcquire and Release decide with one atomic
// operation on an in-flight counter, send no message and allocate nothing.
// An uncontended Acquire plus Release costs about 35ns on the 2-core
// machine of docs/benchmarks.md (golang.org/x/sync/semaphore: about 20ns),
// and about 45ns with two goroutines at it (semaphore: 27ns): each permit
// carries a recycled token so that its Release counts once however many
// copies are released, and the tokens come from a per-processor cache so
// that goroutines do not fight over one free list. The owner closes that
// fast path, in the same atomic step as the denial that queues the first
// waiter, and reopens it once the queue is empty, so the fast path never
// passes a waiter. While anyone waits, a Release is a one-way message that
// wakes the owner to grant the head.
//
// A Pool is safe for concurrent use. Close it when done: it owns a
// goroutine.
type Pool struct {
	rt  *runtime
	pol *poolPolicy
	// tokens recycles the tokens that make each permit release once. A
	// token goes back only from ReleasePermit, after its permit's
	// generation has moved on, so a stale copy of an old permit can never
	// release a new one.
	tokens sync.Pool // *permits.Token
}

// NewPool returns a Pool of size cost units and starts its goroutine. It
// fails, matching permits.ErrInvalidConfig, for a size below 1 or at
// least 2^62.
func NewPool(size int64, opts ...PoolOption) (*Pool, error) {
	if size < 1 || size >= poolGate {
		return nil, configerr.Errorf("actor", "pool size must be in [1, 2^62), got %d", size)
	}
	cfg := defaults()
	for _, o := range opts {
		if o != nil {
			o.applyPool(&cfg)
		}
	}
	p := &Pool{pol: &poolPolicy{size: size}}
	p.tokens.New = func() any { return new(permits.Token) }
	p.rt = newRuntime(cfg, p.pol, pprof.Labels("sluice.pool", cfg.name))
	return p, nil
}

// PoolOption configures a Pool.
type PoolOption interface{ applyPool(*config) }

// WithPoolMaxQueue is WithMaxQueue.
//
// Deprecated: use WithMaxQueue, which configures a Pool as a Limiter.
func WithPoolMaxQueue(n int) PoolOption { return WithMaxQueue(n) }

// WithPoolName is WithName.
//
// Deprecated: use WithName, which names a Pool as a Limiter.
func WithPoolName(name string) PoolOption { return WithName(name) }

// errPoolBusy is the refusal of a TryAcquire that found the pool full or
// someone waiting, and of an Acquire that found the queue at its bound.
// Waiting could cure it, but a pool cannot tell for how long: it carries
// no RetryAfter.
var errPoolBusy = fmt.Errorf("%w: pool has no free capacity for this cost now", permits.ErrRateLimited)

// Acquire waits until cost units are free and every earlier waiter has been
// served, and returns a permit that holds them until its Release.
//
// It fails at once, without queuing, with ctx.Err() if ctx is already done
// (even when capacity is free), permits.ErrInvalidCost for cost < 1,
// permits.ErrCostExceedsCapacity for cost > Size, permits.ErrClosed once the
// pool is closed, and an error matching permits.ErrRateLimited when the
// queue is at WithMaxQueue. A pool cannot predict when capacity comes
// back, so a deadline does not fail early: the waiter queues until the
// deadline passes. If ctx ends while it waits, it leaves the queue and
// returns ctx.Err(); if the grant and the cancellation race and the grant
// wins, it returns the permit and a nil error, and the caller must release
// it. Close fails it with permits.ErrClosed.
func (p *Pool) Acquire(ctx context.Context, cost int64) (permits.Permit, error) {
	if err := ctx.Err(); err != nil {
		return permits.Permit{}, err
	}
	if err := p.check(cost); err != nil {
		return permits.Permit{}, err
	}
	if p.rt.idle() {
		if ok, _ := p.pol.take(cost); ok {
			p.rt.grantedAtOnce()
			return p.permit(cost), nil
		}
	}
	c := p.rt.newCallFor(ctx, opAcquire, cost, p.rt.arrivalStamp(), false)
	res := p.rt.roundTrip(ctx, c, true)
	p.rt.observe(res)
	return p.result(ctx, res, cost)
}

// TryAcquire returns a permit for cost units if they are free now and
// nobody is waiting; it never waits. A refusal matches
// permits.ErrRateLimited (permits.RetryAfter reports no duration: a pool
// cannot tell when capacity comes back).
func (p *Pool) TryAcquire(cost int64) (permits.Permit, error) {
	if err := p.check(cost); err != nil {
		return permits.Permit{}, err
	}
	if p.rt.idle() {
		ok, open := p.pol.take(cost)
		switch {
		case ok:
			p.rt.granted.add(1)
			return p.permit(cost), nil
		case open:
			// Nobody waits and it does not fit: no need to ask the owner.
			p.rt.rejected.add(1)
			return permits.Permit{}, errPoolBusy
		}
	}
	if p.rt.state.Load() == stWaiting {
		p.rt.rejected.add(1) // others wait first
		return permits.Permit{}, errPoolBusy
	}
	c := p.rt.newCallFor(context.Background(), opTry, cost, p.rt.arrivalStamp(), false)
	return p.result(context.Background(), p.rt.roundTrip(context.Background(), c, true), cost)
}

// ReleasePermit gives a permit's units back. It is what Permit.Release
// calls, at most once per permit however many copies are released; call
// Release, not this. It panics if the pool would hold fewer than zero units,
// which only calling it directly can cause.
func (p *Pool) ReleasePermit(pm permits.Permit) {
	w := p.pol.word.Add(-pm.Cost())
	if n := w &^ poolGate; w < 0 || n > p.pol.size {
		panic("actor: Pool released more units than it holds")
	}
	if w&poolGate != 0 {
		// Someone waits: the owner must decide on the head again. The
		// units are already back; the poke carries nothing.
		p.rt.o.Poke()
	}
	if t := pm.Token(); t != nil {
		p.tokens.Put(t)
	}
}

// Close fails every waiting caller with permits.ErrClosed, makes every later
// Acquire and TryAcquire return it, and returns once the owner's goroutine
// has exited. Permits still held stay valid and their Release is harmless.
// Close is idempotent and always returns nil.
func (p *Pool) Close() error {
	p.rt.close()
	return nil
}

// Size returns the pool's capacity in cost units.
func (p *Pool) Size() int64 { return p.pol.size }

// PoolStats is a snapshot of a pool's counters: the shape every limiter
// shares (Rejected counts TryAcquire's refusals and WithPoolMaxQueue's;
// Refunded stays 0, a pool's permits being released, not refunded), its
// capacity and the units held now.
type PoolStats struct {
	permits.Stats
	Size     int64 // capacity in cost units
	InFlight int64 // units held now
}

// Stats returns the counters. They are read one by one, not as one atomic
// snapshot.
func (p *Pool) Stats() PoolStats {
	return PoolStats{Stats: p.rt.stats(), Size: p.pol.size, InFlight: p.pol.word.Load() &^ poolGate}
}

var (
	_ permits.Limiter  = (*Pool)(nil)
	_ permits.Releaser = (*Pool)(nil)
)

func (p *Pool) check(cost int64) error { return p.rt.check(cost, p.pol.size) }

// permit makes a permit for cost units with a recycled token, so that its
// Release reaches ReleasePermit exactly once.
func (p *Pool) permit(cost int64) permits.Permit {
	return permits.NewPermit(cost, p, p.tokens.Get().(*permits.Token))
}

func (p *Pool) result(ctx context.Context, res result, cost int64) (permits.Permit, error) {
	switch res.status {
	case stGranted:
		return p.permit(cost), nil
	case stLimited, stDeadline:
		return permits.Permit{}, errPoolBusy
	}
	return permits.Permit{}, res.ended(ctx)
}

// poolGate marks, in poolPolicy.word, that the owner has waiters: the fast
// path is closed. In-flight counts stay below it (NewPool checks the size).
const poolGate = 1 << 62

// poolPolicy owns the in-flight count. It is one atomic word, shared with
// the fast path: in-flight units, | poolGate while the queue is not empty.
// Any goroutine may add units while the gate is open and give units back at
// any time; only the owner adds units while it is closed, and only the
// owner opens and closes it.
type poolPolicy struct {
	size int64
	word atomic.Int64
}

// take adds cost to the in-flight count if the gate is open and cost fits.
// open reports whether the gate was open when it decided.
func (q *poolPolicy) take(cost int64) (ok, open bool) {
	for {
		w := q.word.Load()
		if w&poolGate != 0 {
			return false, false
		}
		if w+cost > q.size {
			return false, true
		}
		if q.word.CompareAndSwap(w, w+cost) {
			return true, true
		}
	}
}

// admit decides for a request that found the queue empty. A denial of a
// request that will wait closes the gate in the same CAS that observed the
// count, so no release can slip between the two unnoticed: a release after
// it sees the gate and wakes the owner. Only an event can help, so retry
// is always 0.
func (q *poolPolicy) admit(_, cost int64, wait bool) (bool, int64) {
	for {
		w := q.word.Load()
		if w&^poolGate+cost <= q.size {
			if q.word.CompareAndSwap(w, w+cost) {
				return true, 0
			}
			continue
		}
		if !wait || w&poolGate != 0 || q.word.CompareAndSwap(w, w|poolGate) {
			return false, 0
		}
	}
}

// decide grants the head if it fits. The gate is closed while anyone
// waits, so only releases change the word meanwhile.
func (q *poolPolicy) decide(_, cost int64) (bool, int64) { return q.admit(0, cost, false) }

// predict cannot tell: capacity comes back when holders release it.
func (q *poolPolicy) predict(*scheduler.Queue[*call], int64, int64, int64, bool) (int64, bool) {
	return 0, false
}

func (q *poolPolicy) queued(int64, int64)          {}
func (q *poolPolicy) dropped()                     {}
func (q *poolPolicy) removed()                     {}
func (q *poolPolicy) tail() (int64, bool)          { return 0, false }
func (q *poolPolicy) receipt() algorithms.Receipt  { return algorithms.Receipt{} }
func (q *poolPolicy) admitted(at, now int64) int64 { return max(at, now) }
func (q *poolPolicy) quota() (int64, int64)        { return -1, 0 }

// idle reopens the fast path: nobody waits.
func (q *poolPolicy) idle() {
	for {
		w := q.word.Load()
		if w&poolGate == 0 || q.word.CompareAndSwap(w, w&^poolGate) {
			return
		}
	}
}
