package permits

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/configerr"
)

var (
	// ErrRateLimited is matched by every refusal that waiting could cure:
	// *RateLimitError carries how long to wait.
	ErrRateLimited = errors.New("sluice: rate limited")
	// ErrCostExceedsCapacity is returned at once, never after waiting, for a
	// cost larger than the limiter could ever admit in one piece.
	ErrCostExceedsCapacity = errors.New("sluice: cost exceeds capacity")
	// ErrInvalidCost is returned for a cost below 1.
	ErrInvalidCost = errors.New("sluice: cost must be at least 1")
	// ErrClosed is returned by a closed limiter, and to every caller that was
	// waiting when it closed.
	ErrClosed = errors.New("sluice: limiter closed")
	// ErrUnknownGrant is returned for a grant or permit a limiter cannot
	// settle: one of another limiter, one settled or refunded before, or a
	// permit that keeps no record of its grants (settle the permits of All,
	// or the Grants of AcquireGrant).
	ErrUnknownGrant = errors.New("sluice: unknown or already settled grant")
	// ErrInvalidConfig is matched, with errors.Is, by every error any
	// package of sluice returns for a configuration it cannot honour: a
	// constructor's options, a rate, a lane, a tuning call. The message
	// names the package and what was wrong ("keyed: invalid configuration:
	// shards must be between 1 and 1024, got 0"); errors.As finds no
	// exported type, so match this sentinel. The older sentinels of
	// algorithms, keyed, retry, breaker, budget and httplimit are this very
	// error.
	ErrInvalidConfig = configerr.ErrInvalid
)

// RateLimitError is a refusal that waiting could cure. It matches
// ErrRateLimited with errors.Is; when the refusal is because the caller's
// context deadline comes before the predicted grant, it also matches
// context.DeadlineExceeded (Cause).
type RateLimitError struct {
	// RetryAfter is how long until the same request could succeed, if nothing
	// else is admitted first. Always > 0.
	RetryAfter time.Duration
	// Cause is the reason beyond the limit itself, or nil:
	// context.DeadlineExceeded when the deadline is earlier than the grant.
	Cause error
}

func (e *RateLimitError) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("sluice: rate limited, retry after %v (%v)", e.RetryAfter, e.Cause)
	}
	return fmt.Sprintf("sluice: rate limited, retry after %v", e.RetryAfter)
}

// Is reports whether target is ErrRateLimited.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// Unwrap returns Cause.
func (e *RateLimitError) Unwrap() error { return e.Cause }

// RetryAfter returns how long err says to wait, and whether it says so: it
// finds a *RateLimitError in err's chain (or the refusal of RetryLater).
func RetryAfter(err error) (time.Duration, bool) {
	if r, ok := err.(*retryLater); ok {
		return r.d, true
	}
	var rl *RateLimitError
	if errors.As(err, &rl) && rl != nil {
		return rl.RetryAfter, true
	}
	return 0, false
}

// CostExceedsCapacity returns an error matching ErrCostExceedsCapacity that
// names both numbers.
func CostExceedsCapacity(cost, capacity int64) error {
	return fmt.Errorf("%w: cost %d, capacity %d", ErrCostExceedsCapacity, cost, capacity)
}

// InvalidCost returns an error matching ErrInvalidCost that names the cost.
func InvalidCost(cost int64) error {
	return fmt.Errorf("%w: got %d", ErrInvalidCost, cost)
}
