package actor

import (
	"context"

	"github.com/sluicehq/sluice/permits"
)

// permit makes a permit for cost units, granted with the word w after it,
// on a recycled slot that records the grant.
func (p *AdaptivePool) permit(cost int64, w uint64) permits.Permit {
	s := p.slots.Get().(*adSlot)
	s.granted, s.inFlight = p.rt.stamp(), adInFlight(w)
	return permits.NewPermit(cost, p, &s.tok)
}

func (p *AdaptivePool) result(ctx context.Context, res result, cost int64) (permits.Permit, error) {
	switch res.status {
	case stGranted:
		return p.permit(cost, p.pol.word.Load()), nil
	case stLimited, stDeadline:
		return permits.Permit{}, errPoolBusy
	}
	return permits.Permit{}, res.ended(ctx)
}

// release gives pm's units back; an outcome other than Dropped goes to the
// owner as a sample, and its slot is recycled once the controller has seen
// it. The owner is poked when waiters may now fit, or when the sample is
// the first of a batch.
func (p *AdaptivePool) release(pm permits.Permit, o Outcome) {
	w := p.pol.word.Add(-uint64(pm.Cost()))
	if n := adInFlight(w); n > maxCeiling {
		panic("actor: AdaptivePool released more units than it holds")
	}
	s, _ := pm.Token().Value.(*adSlot)
	poke := w&adGate != 0
	switch {
	case s == nil:
	case o == Dropped || o > Timeout:
		p.recycle(s)
	default:
		s.done, s.outcome = p.rt.stamp(), o
		poke = p.pol.report(s) || poke
	}
	if poke {
		p.rt.o.Poke()
	}
}

func (p *AdaptivePool) recycle(s *adSlot) { p.slots.Put(s) }
