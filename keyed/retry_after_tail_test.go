package keyed_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// A TryAcquire refused behind a key's queue says how long a newcomer would
// wait behind the queue's tail, not behind its head: with 49 waiting at a
// 10 ms interval, about 490 ms, not 10 ms.
func TestTryAcquireBehindAKeysQueueSaysTheTailsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(100), 1))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for i := range 49 {
			wg.Go(func() {
				if _, err := l.Acquire(context.Background(), "k", 1); err != nil {
					t.Errorf("waiter %d: %v", i, err)
				}
			})
			synctest.Wait()
		}
		for range 3 { // the first may ask the owner; those after read what it published
			_, err = l.TryAcquire("k", 1)
			wait, ok := permits.RetryAfter(err)
			require.True(t, ok, "%v", err)
			assert.GreaterOrEqual(t, wait, 490*time.Millisecond, "behind the tail")
			assert.LessOrEqual(t, wait, 500*time.Millisecond, "within one interval of it")
		}
		wg.Wait()
	})
}
