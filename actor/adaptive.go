package actor

import (
	"context"
	"math/rand/v2"
	"runtime/pprof"
	"sync"

	"github.com/sluicehq/sluice/permits"
)

// AdaptivePool is a concurrency limiter whose limit finds itself: a
// Controller (AIMD, Vegas, Gradient2, or one of yours) moves it between a
// floor and a ceiling from what the downstream does, the latency of each
// request and its refusals (docs/adaptive.md). It is a Pool in every other
// way: Acquire waits in FIFO order, with cancellation and deadlines, or,
// WithoutQueue, refuses at once; TryAcquire never waits.
//
// Report each request's outcome with Done(permit, outcome): the pool
// measures the latency itself, from the grant to Done, so callers cannot
// get it wrong. A plain Permit.Release gives the capacity back and reports
// nothing (Dropped): code that releases a permit it never used (permits.All
// failing half-way, a defer on an error path) then cannot teach the
// controller that the downstream answers in no time, which would be the
// error a release-means-success default makes silently. The cost of
// forgetting Done is visible instead: Stats.Samples stays 0 and the limit
// stays where it started.
//
// The controller runs on the pool's owner goroutine, which sees every
// outcome in the order reported, so it needs no lock; outcomes gather for
// a millisecond before it decides on them. A busy pool measures the
// latency of one grant in a stride, not of each, and counts every load
// signal; what Acquire plus Done costs against a Pool is measured in
// docs/adaptive.md (Cost). The fast path stays lock-free:
// count and limit share one atomic word, so an admission never passes a
// lowered limit. A lowered limit takes no permit back: those granted
// before it drain, and no new one is granted until the count is under it.
//
// An AdaptivePool is safe for concurrent use. Close it when done: it owns a
// goroutine.
type AdaptivePool struct {
	rt    *runtime
	pol   *adaptivePolicy
	cfg   adaptiveConfig
	slots sync.Pool // *adSlot, each its permit's token
	mono  bool      // the clock is package time's: stamp reads it alone
}

// NewAdaptivePool returns a pool whose limit ctl moves, and starts its
// goroutine. It fails, matching permits.ErrInvalidConfig, for a nil
// controller, a controller of this package with bad parameters, or limits
// that are not 1 ≤ floor ≤ initial ≤ ceiling < 2^31 (WithLimits).
func NewAdaptivePool(ctl Controller, opts ...AdaptiveOption) (*AdaptivePool, error) {
	cfg := adaptiveConfig{config: defaults(), floor: 1, initial: 20, ceiling: 1000}
	for _, o := range opts {
		if o != nil {
			o.applyAdaptive(&cfg)
		}
	}
	if err := cfg.validate(ctl); err != nil {
		return nil, err
	}
	_, mono := cfg.clock.(systemClock)
	p := &AdaptivePool{cfg: cfg, mono: mono}
	p.pol = &adaptivePolicy{floor: cfg.floor, ceiling: cfg.ceiling, ctl: ctl}
	p.pol.ring.init()
	p.pol.word.Store(uint64(cfg.initial) << adShift)
	p.slots.New = func() any {
		s := &adSlot{adSlotFields: adSlotFields{pool: p, grants: rand.Uint32()}}
		s.tok.Value = s
		return s
	}
	p.rt = newRuntime(cfg.config, p.pol, pprof.Labels("sluice.pool", cfg.name))
	return p, nil
}

// Acquire waits until cost units fit under the limit and every earlier
// waiter has been served, as Pool.Acquire does, and returns a permit to
// end with Done. WithoutQueue, it refuses at once instead of waiting, as
// TryAcquire does. A cost above the floor fails with
// permits.ErrCostExceedsCapacity: the limit may never rise above it.
func (p *AdaptivePool) Acquire(ctx context.Context, cost int64) (permits.Permit, error) {
	if err := ctx.Err(); err != nil {
		return permits.Permit{}, err
	}
	if p.cfg.noQueue {
		return p.TryAcquire(cost)
	}
	if err := p.rt.check(cost, p.pol.floor); err != nil {
		return permits.Permit{}, err
	}
	if p.rt.idle() {
		if ok, _, w := p.pol.take(cost); ok {
			p.rt.grantedAtOnce()
			return p.permit(cost, w), nil
		}
	}
	c := p.rt.newCallFor(ctx, opAcquire, cost, p.rt.arrivalStamp(), false)
	res := p.rt.roundTrip(ctx, c, true)
	p.rt.observe(res)
	return p.result(ctx, res, cost)
}

// TryAcquire returns a permit for cost units if they fit under the limit
// now and nobody waits; it never waits. A refusal matches
// permits.ErrRateLimited, with no RetryAfter.
func (p *AdaptivePool) TryAcquire(cost int64) (permits.Permit, error) {
	if err := p.rt.check(cost, p.pol.floor); err != nil {
		return permits.Permit{}, err
	}
	if p.rt.idle() {
		ok, open, w := p.pol.take(cost)
		switch {
		case ok:
			p.rt.granted.add(1)
			return p.permit(cost, w), nil
		case open:
			p.rt.rejected.add(1)
			return permits.Permit{}, errPoolBusy
		}
	}
	if p.rt.state.Load() == stWaiting {
		p.rt.rejected.add(1)
		return permits.Permit{}, errPoolBusy
	}
	c := p.rt.newCallFor(context.Background(), opTry, cost, p.rt.arrivalStamp(), false)
	return p.result(context.Background(), p.rt.roundTrip(context.Background(), c, true), cost)
}

// Done gives pm's units back and reports its request's outcome to the
// controller, with the latency from its grant to now. Like Release it
// counts once per permit, whichever of the two comes first and however
// many copies are ended; a permit of another limiter is released as
// Release would.
func (p *AdaptivePool) Done(pm permits.Permit, o Outcome) {
	t := pm.Token()
	if t == nil {
		return
	}
	s, ok := t.Value.(*adSlot)
	if !ok || s.pool != p {
		pm.Release()
		return
	}
	if pm.Claim() {
		p.release(pm, s, o)
	}
}

// ReleasePermit is what Permit.Release calls: it gives the units back and
// reports Dropped. Call Release or Done, not this.
func (p *AdaptivePool) ReleasePermit(pm permits.Permit) {
	p.release(pm, pm.Token().Value.(*adSlot), Dropped)
}

// Close fails every waiter with permits.ErrClosed, makes every later
// Acquire and TryAcquire return it, and returns once the owner's goroutine
// has exited. Permits still held stay valid; ending them is harmless.
// Close is idempotent and always returns nil.
func (p *AdaptivePool) Close() error {
	p.rt.close()
	return nil
}

// Limit returns the current limit, in cost units.
func (p *AdaptivePool) Limit() int64 { return adLimit(p.pol.word.Load()) }

var (
	_ permits.Limiter  = (*AdaptivePool)(nil)
	_ permits.Releaser = (*AdaptivePool)(nil)
)
