package retry

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice/permits"
)

// Class is what a classifier makes of a failed attempt's error.
type Class int8

// The classes of an error.
const (
	// Transient errors are retried, after a wait, while attempts, time and
	// budget allow.
	Transient Class = iota
	// Permanent errors are returned as they are, at once: retrying cannot
	// help (a bad request, a cost no limiter can grant) or must not happen
	// (a request that is not idempotent).
	Permanent
)

// String returns "transient" or "permanent".
func (c Class) String() string {
	if c == Permanent {
		return "permanent"
	}
	return "transient"
}

// DefaultClassifier is the classifier Do uses unless told otherwise. It
// calls Permanent what waiting cannot cure: errors marked with
// MarkPermanent, context.Canceled (someone meant it), and the permits
// errors no wait fixes (ErrInvalidCost, ErrCostExceedsCapacity, ErrClosed).
// Everything else is Transient, context.DeadlineExceeded included (an
// attempt's own timeout) and refusals that say how long to wait (a rate
// limiter's *permits.RateLimitError, a *breaker.OpenError).
func DefaultClassifier(err error) Class {
	switch {
	case errors.Is(err, errPermanent),
		errors.Is(err, context.Canceled),
		errors.Is(err, permits.ErrInvalidCost),
		errors.Is(err, permits.ErrCostExceedsCapacity),
		errors.Is(err, permits.ErrClosed):
		return Permanent
	}
	return Transient
}
