package permits

import (
	"errors"
	"fmt"
)

// Settler is implemented by rate limiters whose grants can be settled with
// the cost the call turned out to have: a request to an LLM API estimated
// at 1,000 tokens that used 1,400. actor.Limiter implements it.
type Settler interface {
	Refunder
	// Settle settles g at actual units, once: less than granted gives the
	// difference back as far as the refund rule allows, more is charged as
	// a debt later grants wait for. It fails with ErrUnknownGrant for a
	// grant of another limiter, or one settled or refunded before.
	Settle(g Grant, actual int64) error
}

// Settle settles a permit of All with the cost the call really used: every
// rate part that is a Settler settles its own share (actual, or its fixed
// cost for a part wrapped in FixedCost, which a request slot is whatever the
// tokens), and the pools are untouched (they hold until Release). Call it
// after the call and before Release; once per permit. To settle the permit
// of a single limiter, acquire it through All(lim).
//
// It fails with ErrInvalidCost for actual < 0, and with ErrUnknownGrant for
// a permit that is not All's, is already released or settled; the errors
// of the parts are joined.
func Settle(p Permit, actual int64) error {
	if actual < 0 {
		return InvalidCost(actual)
	}
	t := p.Token()
	if t == nil || t.gen.Load() != p.gen {
		return ErrUnknownGrant // a rate permit of its own, or released
	}
	r, ok := t.Value.(*record)
	if !ok || r.settled {
		return ErrUnknownGrant
	}
	r.settled = true
	var errs []error
	for _, i := range r.owner.rates {
		part := r.owner.parts[i]
		s, ok := part.ref.(Settler)
		if !ok || !r.taken[i] {
			continue
		}
		if err := s.Settle(r.got[i], part.cost(actual)); err != nil {
			errs = append(errs, fmt.Errorf("part %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}
