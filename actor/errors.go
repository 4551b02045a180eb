package actor

import (
	"context"

	"github.com/sluicehq/sluice/permits"
)

// check refuses at once what no owner should see: a cost below 1 or above
// what the owner could ever admit, or any request once it is closed.
func (r *runtime) check(cost, capacity int64) error {
	switch {
	case cost < 1:
		return permits.InvalidCost(cost)
	case cost > capacity:
		return permits.CostExceedsCapacity(cost, capacity)
	case r.o.Closed():
		return permits.ErrClosed
	}
	return nil
}

// ended is the error of a round trip that ended without a grant or a
// refusal: the caller's context ended while it waited, or the owner closed.
func (res result) ended(ctx context.Context) error {
	if res.status == stCanceled {
		if err := ctx.Err(); err != nil {
			return err
		}
		return context.Canceled
	}
	return permits.ErrClosed
}
