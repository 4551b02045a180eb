package permits

import (
	"context"
	"time"
)

// Quota is what a limiter can say about its capacity along with a decision:
// enough for a server to fill in the RateLimit and Retry-After fields of a
// response without computing anything again. It is a small value; durations
// are relative to the instant the decision was made at.
type Quota struct {
	// Limit is the most one decision can ever admit: the algorithm's
	// capacity (a GCRA's burst, a window's limit).
	Limit int64
	// Remaining is the number of cost units still admissible right after
	// the decision, 0 while others wait ahead, or -1 when the limiter could
	// not tell without asking its owner again (see the limiter's docs).
	Remaining int64
	// Reset is how long until the limit is back to full capacity if nothing
	// else is admitted (0: it is full). While others wait it is at least
	// RetryAfter.
	Reset time.Duration
	// RetryAfter, on a refusal, is how long until the same cost could be
	// admitted if nothing else is admitted first; 0 on a grant.
	RetryAfter time.Duration
	// Next is how long until one unit more than Remaining is admissible if
	// nothing else is admitted, for a limit whose units come back when
	// admissions leave a window (the oldest leaving a sliding window, a
	// fixed window ending), or 0 when the limiter does not say: a limit
	// that refills at a steady rate gets one back every Window/Limit.
	Next time.Duration
	// Window is how long the limit takes to come back from empty to full,
	// the window of the policy that a server advertises (a GCRA of 100 per
	// minute with a burst of 100: one minute), or 0 when the algorithm does
	// not say.
	Window time.Duration
}

// QuotaLimiter is a Limiter whose non-blocking decision also reports the
// Quota: actor.Limiter is one.
type QuotaLimiter interface {
	Limiter
	// TryAcquireQuota is TryAcquire, with the Quota as of the decision on a
	// grant and on a refusal by the limit. For other errors (an invalid
	// cost, a closed limiter) only Limit is set.
	TryAcquireQuota(cost int64) (Permit, Quota, error)
}

// KeyedQuotaLimiter is a KeyedLimiter that reports the Quota of a key with
// each decision, waiting or not: keyed.Limiter is one. Middleware that puts
// the quota in response headers (package httplimit) looks for it.
type KeyedQuotaLimiter[K comparable] interface {
	KeyedLimiter[K]
	// AcquireQuota is Acquire, with the key's Quota as of the grant (or of
	// the refusal, for an error matching ErrRateLimited).
	AcquireQuota(ctx context.Context, key K, cost int64) (Permit, Quota, error)
	// TryAcquireQuota is TryAcquire, with the key's Quota as of the
	// decision (or of the refusal).
	TryAcquireQuota(key K, cost int64) (Permit, Quota, error)
}
