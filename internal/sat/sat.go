// Package sat adds instants and durations on sluice's int64 timelines
// without wrapping: a bound of math.MaxInt64, the way users write
// "forever", must stay forever rather than become an instant in the past.
package sat

import (
	"math"
	"time"
)

// After returns at+d, at math.MaxInt64 when the sum would pass it. Neither
// is negative: instants on a timeline start at its epoch.
func After(at int64, d time.Duration) int64 {
	if int64(d) > math.MaxInt64-at {
		return math.MaxInt64
	}
	return at + int64(d)
}

// Times returns n·d, at math.MaxInt64 when the product would pass it.
// Neither is negative.
func Times(n, d int64) int64 {
	if n == 0 || d == 0 {
		return 0
	}
	if n > math.MaxInt64/d {
		return math.MaxInt64
	}
	return n * d
}
