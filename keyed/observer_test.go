package keyed_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// Each granted Acquire tells the observer how long it waited, per key:
// two queued on k behind its burst (10/s) wait 100 and 200 ms; one on
// another key is granted at once; TryAcquire is not reported.
func TestEachGrantedAcquireOfAKeyTellsTheObserverItsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h permits.WaitHistogram
		l := newLimiter(t, gcra10, keyed.WithObserver(&h))
		_, err := l.TryAcquire("k", 2)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { _, _ = l.Acquire(context.Background(), "k", 1) })
			synctest.Wait()
		}
		_, err = l.Acquire(context.Background(), "other", 1)
		require.NoError(t, err)
		wg.Wait()
		s := h.Snapshot()
		assert.Equal(t, uint64(3), s.Count)
		assert.Equal(t, uint64(1), s.Counts[0], "the other key, at once")
		assert.Equal(t, 300*time.Millisecond, s.Sum, "100ms + 200ms")
	})
}
