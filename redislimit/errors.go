package redislimit

import (
	"errors"
	"fmt"
	"time"
)

// ErrUnavailable is matched, with errors.Is, by the error of every request
// the limiter could not decide because Redis could not be reached or did
// not answer in time (fail-closed, the default). The error also wraps the
// cause: a dial error, a reset connection, a *TimeoutError, an error reply.
var ErrUnavailable = errors.New("redislimit: redis unavailable")

// UnavailableError is the error of a request that Redis did not decide.
// It matches ErrUnavailable and unwraps to its Cause.
type UnavailableError struct {
	Key   string // the Redis key
	Cause error
	// Unknown reports that the call may have reached Redis and been
	// applied (a timeout, a connection lost after sending): its costs are
	// counted as consumed, and nothing is sent again on its behalf.
	Unknown bool
}

func (e *UnavailableError) Error() string {
	if e.Unknown {
		return fmt.Sprintf("redislimit: key %q: outcome unknown, counted as consumed: %v", e.Key, e.Cause)
	}
	return fmt.Sprintf("redislimit: key %q: redis unavailable: %v", e.Key, e.Cause)
}

// Is matches ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Cause }

// TimeoutError is the cause of an UnavailableError for a call that did not
// answer within WithCallTimeout. It does not match context.DeadlineExceeded,
// so that a caller's own deadline is never confused with a slow Redis.
type TimeoutError struct{ After time.Duration }

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("redis did not answer within %v", e.After)
}
