package permits

import "time"

// RetryLater returns the refusal of a decision that found no room: an error
// that matches ErrRateLimited, for which RetryAfter reports d, and in which
// errors.As finds a *RateLimitError{RetryAfter: d}. d below 1 counts as 1.
//
// It is what a lock-free path returns. The error is 8 bytes without
// pointers, which the runtime's tiny allocator packs two to a block, where a
// RateLimitError is 24 bytes the collector scans: about half the cost of a
// refusal's allocation (BenchmarkRefusal), and refusals are the hot path of
// a limiter under pressure.
func RetryLater(d time.Duration) error { return &retryLater{d: max(d, 1)} }

type retryLater struct{ d time.Duration }

func (e *retryLater) Error() string { return (&RateLimitError{RetryAfter: e.d}).Error() }

// Is reports whether target is ErrRateLimited.
func (e *retryLater) Is(target error) bool { return target == ErrRateLimited }

// As sets a **RateLimitError target to a RateLimitError of its own.
func (e *retryLater) As(target any) bool {
	p, ok := target.(**RateLimitError)
	if ok {
		*p = &RateLimitError{RetryAfter: e.d}
	}
	return ok
}
