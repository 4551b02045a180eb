package permits_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/permits"
)

// Each wait lands in the least bucket whose bound holds it, bounds
// inclusive; what passes the last bound lands in the last bucket.
func TestAWaitLandsInTheLeastBucketThatHoldsIt(t *testing.T) {
	var h permits.WaitHistogram
	for _, d := range []time.Duration{-time.Second, 0, time.Microsecond, time.Microsecond + 1, 2 * time.Microsecond, 3 * time.Microsecond, time.Millisecond, 10 * time.Hour, math.MaxInt64} {
		h.Waited(d)
	}
	s := h.Snapshot()
	want := [permits.WaitBuckets]uint64{}
	want[0] = 3  // -1s, 0, 1µs
	want[1] = 2  // 1µs+1ns, 2µs
	want[2] = 1  // 3µs
	want[10] = 1 // 1ms ≤ 1024µs
	want[permits.WaitBuckets-1] = 2
	assert.Equal(t, want, s.Counts)
	assert.Equal(t, uint64(9), s.Count)
	assert.Equal(t, time.Microsecond, s.Bounds[0])
	assert.Equal(t, 1024*time.Microsecond, s.Bounds[10])
	assert.Equal(t, time.Duration(math.MaxInt64), s.Sum, "saturates, never wraps")
}

// Concurrent waits are all counted, with their sum.
func TestConcurrentWaitsAreAllCounted(t *testing.T) {
	var h permits.WaitHistogram
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				h.Waited(5 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	s := h.Snapshot()
	assert.Equal(t, uint64(8000), s.Count)
	assert.Equal(t, 8000*5*time.Millisecond, s.Sum)
	assert.Equal(t, uint64(8000), s.Counts[13], "5ms ≤ 8192µs")
}

func BenchmarkWaitHistogram(b *testing.B) {
	var h permits.WaitHistogram
	b.RunParallel(func(pb *testing.PB) {
		d := 3 * time.Millisecond
		for pb.Next() {
			h.Waited(d)
		}
	})
}
