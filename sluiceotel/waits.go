package sluiceotel

import (
	"time"

	"github.com/sluicehq/sluice/permits"
)

// The wait histogram: one name, unit and set of buckets whether it is
// recorded (WaitRecorder) or produced from a permits.WaitHistogram
// (WaitProducer), so that a query does not depend on which.
const (
	waitName = "sluice.limiter.wait.duration"
	waitUnit = "s"
	waitDesc = "Time each granted Acquire waited, 0 for one granted at once."
)

// WaitBounds returns the upper bounds, in seconds and inclusive, of the
// wait histogram's buckets: permits.WaitHistogram's, 1µs doubling to
// 4294.967296s (about 71.6 minutes); longer waits fall in the bucket past the last bound. Each
// call returns a new slice.
func WaitBounds() []float64 {
	b := make([]float64, permits.WaitBuckets-1)
	for i := range b {
		// As time.Duration.Seconds computes it, so that a wait of
		// exactly a bound is recorded in its bucket, as WaitHistogram
		// counts it.
		b[i] = (time.Microsecond << i).Seconds()
	}
	return b
}
