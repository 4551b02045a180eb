package keyed_test

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/keyed"
)

// WithIdleTimeout(math.MaxInt64) keeps every key for good: the instant a
// key counts as idle, the one it was full at plus the timeout, saturates
// instead of wrapping into the past, where the sweep dropped keys with
// their own algorithm at once and remade them full, so that a key that had
// taken its burst was granted it again a few milliseconds later. Both
// forms are checked: the first configuration's keys are cells, a second
// configuration's keep their own GCRA.
func TestWithIdleTimeoutForeverKeepsEveryKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, func(k string) (algorithms.Algorithm, error) {
			if k == "own" {
				return algorithms.NewGCRA(algorithms.PerHour(1), 3)
			}
			return algorithms.NewGCRA(algorithms.PerHour(2), 3)
		}, keyed.WithIdleTimeout(math.MaxInt64), keyed.WithShards(1))
		time.Sleep(time.Second) // keys made after the limiter's epoch
		for _, k := range []string{"cell", "own"} {
			for range 3 {
				_, err := l.TryAcquire(k, 1)
				require.NoError(t, err, "%s: the burst", k)
			}
		}
		require.Equal(t, 2, l.Stats().Keys)
		for range 5 { // the sweep passes, recheck apart
			time.Sleep(20 * time.Millisecond)
			synctest.Wait()
		}
		assert.Equal(t, 2, l.Stats().Keys, "no key dropped")
		for _, k := range []string{"cell", "own"} {
			_, err := l.TryAcquire(k, 1)
			assert.Error(t, err, "%s: its burst is spent, not given again", k)
		}
	})
}
