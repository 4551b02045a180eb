package actor

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/permits"
)

// permit makes a permit for cost units, granted with the word w after it,
// on a recycled slot that records the grant.
func (p *AdaptivePool) permit(cost int64, w uint64) permits.Permit {
	s := p.slots.Get().(*adSlot)
	s.granted, s.inFlight = unstamped, adInFlight(w)
	if p.pol.sampled(s) {
		s.granted = p.stamp()
	}
	return permits.NewPermit(cost, p, &s.tok)
}

// unstamped marks a grant whose latency is not sampled (restride).
const unstamped = -1

func (p *AdaptivePool) result(ctx context.Context, res result, cost int64) (permits.Permit, error) {
	switch res.status {
	case stGranted:
		return p.permit(cost, p.pol.word.Load()), nil
	case stLimited, stDeadline:
		return permits.Permit{}, errPoolBusy
	}
	return permits.Permit{}, res.ended(ctx)
}

// release gives pm's units back, on its slot s, and, for an outcome other than Dropped,
// queues a sample for the owner (a stamped Dropped one goes too, for the
// stride alone). The owner is poked when waiters may now
// fit, or when the sample is the first since it last read them.
func (p *AdaptivePool) release(pm permits.Permit, s *adSlot, o Outcome) {
	w := p.pol.word.Add(-uint64(pm.Cost()))
	if n := adInFlight(w); n > maxCeiling {
		panic("actor: AdaptivePool released more units than it holds")
	}
	poke := w&adGate != 0
	switch {
	case o > Timeout:
	case o == Dropped && s.granted != unstamped:
		// No sample, but a grant that paid for its stamp: the owner counts
		// it when it sets the stride, or a pool ended by Release alone
		// would stamp every grant forever (a clock read each, 20% of
		// Acquire plus Release at 64 goroutines).
		poke = p.pol.ring.put(s.granted, s.granted, s.inFlight, Dropped) || poke
	case o == Dropped:
	case s.granted != unstamped:
		poke = p.pol.ring.put(s.granted, p.stamp(), s.inFlight, o) || poke
	case o != Success:
		// A load signal counts whether or not its latency was sampled: it
		// goes with an RTT of 0, granted as it ended.
		now := p.stamp()
		poke = p.pol.ring.put(now, now, s.inFlight, o) || poke
	}
	p.slots.Put(s)
	if poke {
		p.rt.o.Poke()
	}
}

// stamp reads the pool's timeline, as runtime.stamp does. On package
// time's clock it reads the monotonic clock alone (time.Since), not the
// wall clock too: on the virtual machine of docs/benchmarks.md that halves
// the cost of the two readings each request's latency needs.
func (p *AdaptivePool) stamp() int64 {
	if p.mono {
		return int64(time.Since(p.rt.epoch))
	}
	return p.rt.stamp()
}
