package redislimit_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

func TestGrantsTheBurstThenReservesInOrderAtExactInstants(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "quota", algorithms.PerSecond(10), 2)
		start := time.Now()
		type grant struct {
			i  int
			at time.Duration
		}
		got := make(chan grant, 5)
		for i := range 5 {
			go func() {
				_, err := l.Acquire(context.Background(), 1)
				assert.NoError(t, err)
				got <- grant{i, time.Since(start)}
			}()
		}
		var at []time.Duration
		for range 5 {
			g := <-got
			at = append(at, g.at)
		}
		assert.Equal(t, []time.Duration{0, 0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}, at)
		st := l.Stats()
		assert.Equal(t, uint64(5), st.Granted)
		assert.LessOrEqual(t, st.Calls, uint64(5))
	})
}

func TestTryAcquireRefusesWithTheExactWaitAndNeverPassesAWaiter(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "try", algorithms.PerSecond(3), 1)
		_, err := l.TryAcquire(1)
		require.NoError(t, err)
		_, err = l.TryAcquire(1)
		var rl *permits.RateLimitError
		require.ErrorAs(t, err, &rl)
		assert.Equal(t, 333334*time.Microsecond, rl.RetryAfter, "one unit of 3/s, rounded up to the µs")
		assert.NotErrorIs(t, err, context.DeadlineExceeded)

		// A waiter queues; a TryAcquire behind it is refused without a call.
		done := make(chan error)
		go func() {
			_, err := l.Acquire(context.Background(), 1)
			done <- err
		}()
		synctest.Wait()
		calls := l.Stats().Calls
		assert.Equal(t, 1, l.Stats().Waiting)
		time.Sleep(100 * time.Millisecond)
		_, err = l.TryAcquire(1)
		require.ErrorAs(t, err, &rl, "FIFO: a TryAcquire never passes a waiter")
		assert.Equal(t, 566667*time.Microsecond, rl.RetryAfter, "the next slot after the waiter's, at 2/3 s")
		assert.Equal(t, calls, l.Stats().Calls, "refused locally, behind the waiter")
		require.NoError(t, <-done)
	})
}

func TestFailsFastWithoutSendingAnything(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "fast", algorithms.PerSecond(10), 5)
		_, err := l.Acquire(context.Background(), 6)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
		_, ok := permits.RetryAfter(err)
		assert.False(t, ok, "a cost above the burst can never pass: no RetryAfter")
		_, err = l.TryAcquire(6)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
		_, err = l.Acquire(context.Background(), 0)
		assert.ErrorIs(t, err, permits.ErrInvalidCost)
		_, err = l.TryAcquire(-1)
		assert.ErrorIs(t, err, permits.ErrInvalidCost)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = l.Acquire(ctx, 1)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, uint64(0), l.Stats().Calls, "nothing was sent")
		exists, err := c.Exists(context.Background(), "fast").Result()
		require.NoError(t, err)
		assert.Zero(t, exists)
	})
}

// The longest burst New accepts, at Redis's own clock: its TAT, 45 years
// ahead, is written and read back exactly, and the next unit waits one
// interval.
func TestALongBurstKeepsDecidingAtRedisTime(t *testing.T) {
	c := redistest.Test(t).Client(t)
	l := newLimiter(t, c, "long", algorithms.PerHour(1), 400_000)
	_, err := l.TryAcquire(400_000)
	require.NoError(t, err)
	for range 2 {
		_, err = l.TryAcquire(1)
		wait, ok := permits.RetryAfter(err)
		require.True(t, ok, "%v", err)
		assert.Greater(t, wait, time.Hour-time.Minute)
		assert.LessOrEqual(t, wait, time.Hour)
	}
	ttl, err := c.PTTL(context.Background(), "long").Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 45*365*24*time.Hour, "the key lives until its TAT")
}
