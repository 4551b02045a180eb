package breaker

import (
	"errors"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/configerr"
)

var (
	// ErrInvalidConfig is permits.ErrInvalidConfig, the one error that every
	// configuration error of sluice matches.
	//
	// Deprecated: match permits.ErrInvalidConfig, the same error.
	ErrInvalidConfig = configerr.ErrInvalid
	// ErrOpen is matched, with errors.Is, by the *OpenError returned for a
	// call the breaker refused.
	ErrOpen = errors.New("breaker: open")
)

// OpenError is returned, instead of running the call, while the breaker is
// open or while it is half-open with every probe slot taken. It matches
// ErrOpen.
type OpenError struct {
	// Name is the breaker's name (WithName), or "".
	Name string
	// State is Open, or HalfOpen when every probe slot is taken.
	State State
	// Forced reports that the breaker is held open by ForceOpen.
	Forced bool
	// RetryAfter is how long until the breaker could admit a call, always
	// > 0: while open, the rest of the open timeout; while half-open with
	// every slot taken, the time left until the half-open timeout reopens the
	// breaker (the probes in flight may close it sooner); while forced open,
	// the open timeout, as a polling interval, since only Reset ends it.
	RetryAfter time.Duration
}

func (e *OpenError) Error() string {
	s := "breaker"
	if e.Name != "" {
		s += " " + strconv.Quote(e.Name)
	}
	switch {
	case e.Forced:
		s += ": forced open"
	case e.State == HalfOpen:
		s += ": open (half-open, every probe slot taken)"
	default:
		s += ": open"
	}
	return s + ", retry after " + e.RetryAfter.String()
}

// Is reports whether target is ErrOpen.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }
