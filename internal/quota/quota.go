// Package quota turns an algorithm's decision into the permits.Quota that
// limiters report with it, so that actor and keyed say the same thing.
package quota

import (
	"math/bits"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// Of returns the Quota of decision d, made by alg at now. A refusal's
// RetryAfter is at least 1 ns, like every RetryAfter.
func Of(alg algorithms.Algorithm, d algorithms.Decision, now time.Time) permits.Quota {
	q := permits.Quota{
		Limit:     alg.Capacity(),
		Remaining: d.Remaining,
		Reset:     max(d.ResetAt.Sub(now), 0),
		Window:    Window(alg),
	}
	if !d.NextAt.IsZero() {
		q.Next = max(d.NextAt.Sub(now), 0)
	}
	if !d.Allowed {
		q.RetryAfter = max(d.RetryAt.Sub(now), 1)
		q.Reset = max(q.Reset, q.RetryAfter)
	}
	return q
}

// Behind returns the Quota of a refusal behind waiters, who take every unit
// that comes back until wait has passed.
func Behind(alg algorithms.Algorithm, wait time.Duration) permits.Quota {
	return permits.Quota{Limit: alg.Capacity(), Reset: wait, RetryAfter: wait, Window: Window(alg)}
}

// rated is implemented by the algorithms that refill at a rate: GCRA and
// the token and leaky buckets.
type rated interface{ Rate() algorithms.Rate }

// Window returns how long alg takes to refill its whole capacity, rounded
// up to the nanosecond, or 0 when alg does not tell its rate (the windows
// do not, yet). The constructors bound that span to about 36 years, so the
// 128-bit quotient fits.
func Window(alg algorithms.Algorithm) time.Duration {
	r, ok := alg.(rated)
	if !ok {
		return 0
	}
	rate := r.Rate()
	if rate.Count <= 0 || rate.Per <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(alg.Capacity()), uint64(rate.Per))
	if hi >= uint64(rate.Count) {
		return 0
	}
	q, rem := bits.Div64(hi, lo, uint64(rate.Count))
	if rem != 0 {
		q++
	}
	if q > 1<<62 {
		return 0
	}
	return time.Duration(q)
}
