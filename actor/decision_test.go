package actor_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

func TestTryAcquireQuotaOnTheFastPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerMinute(100), 100))
		defer l.Close()
		p, q, err := l.TryAcquireQuota(50)
		require.NoError(t, err)
		assert.Equal(t, int64(50), p.Cost())
		assert.Equal(t, permits.Quota{Limit: 100, Remaining: 50, Reset: 30 * time.Second, Window: time.Minute}, q)

		_, q, err = l.TryAcquireQuota(60)
		require.ErrorIs(t, err, permits.ErrRateLimited)
		wait, _ := permits.RetryAfter(err)
		assert.Equal(t, 6*time.Second, wait)
		assert.Equal(t, permits.Quota{Limit: 100, Remaining: 50, Reset: 30 * time.Second, RetryAfter: 6 * time.Second, Window: time.Minute}, q)
		assert.Equal(t, actor.Stats{Granted: 1, Rejected: 1}, l.Stats())
	})
}

func TestTryAcquireQuotaBehindWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer l.Close()
		require.True(t, l.Allow())
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = l.Acquire(context.Background(), 1) })
		synctest.Wait()
		// The waiter is granted at 100ms: a newcomer is told at least that,
		// what the owner published, without a message.
		_, q, err := l.TryAcquireQuota(1)
		require.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Equal(t, int64(0), q.Remaining)
		assert.Equal(t, 100*time.Millisecond, q.RetryAfter)
		assert.Equal(t, q.RetryAfter, q.Reset)
		wg.Wait()
	})
}

func TestTryAcquireQuotaThroughTheOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw, err := algorithms.NewSlidingWindow(algorithms.PerSecond(2))
		require.NoError(t, err)
		l := actor.MustNew(sw)
		defer l.Close()
		for remaining := int64(1); remaining >= 0; remaining-- {
			_, q, err := l.TryAcquireQuota(1)
			require.NoError(t, err)
			assert.Equal(t, permits.Quota{Limit: 2, Remaining: remaining, Reset: time.Second, Window: time.Second}, q,
				"the owner's answer carries what remains, exact")
		}
		_, q, err := l.TryAcquireQuota(1)
		require.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Equal(t, permits.Quota{Limit: 2, Remaining: 0, Reset: time.Second, RetryAfter: time.Second, Window: time.Second}, q)
	})
}

func TestTryAcquireQuotaErrors(t *testing.T) {
	l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 5))
	_, q, err := l.TryAcquireQuota(6)
	assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
	assert.Equal(t, permits.Quota{Limit: 5}, q)
	_, _, err = l.TryAcquireQuota(0)
	assert.ErrorIs(t, err, permits.ErrInvalidCost)
	require.NoError(t, l.Close())
	_, _, err = l.TryAcquireQuota(1)
	assert.ErrorIs(t, err, permits.ErrClosed)
}
