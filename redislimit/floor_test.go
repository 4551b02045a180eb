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
	"github.com/sluicehq/sluice/redislimit"
)

// The floor counts what this process holds and nothing it gave back: at
// 10/s, burst 2, two grants at 0 and reservations at 100, 200, 300 and
// 400 ms leave the TAT at 600 ms. The first two reservations are granted;
// at 250 ms the last two waiters give up and their reservations go back
// (TAT 400 ms); Redis loses the key, and the next caller is reserved at
// 300 ms, exactly where it would have been had nothing been lost. A floor
// that kept what was given back would put it at 500 ms (under-admitting);
// one that forgot what was granted, or no floor, at 250 ms (now).
func TestAFloorLeavesOutTheReservationsGivenBack(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "floor-give", algorithms.PerSecond(10), 2)
		begin := time.Now()
		for range 2 {
			_, err := l.TryAcquire(1)
			require.NoError(t, err)
		}
		acquire := func(ctx context.Context) <-chan outcome {
			o := start(begin, func() error { _, err := l.Acquire(ctx, 1); return err })
			synctest.Wait() // reserved, in this order
			return o
		}
		w1, w2 := acquire(context.Background()), acquire(context.Background())
		ctx3, cancel3 := context.WithCancel(context.Background())
		ctx4, cancel4 := context.WithCancel(context.Background())
		w3, w4 := acquire(ctx3), acquire(ctx4)
		for i, w := range []<-chan outcome{w1, w2} {
			o := <-w
			require.NoError(t, o.err)
			assert.Equal(t, time.Duration(i+1)*100*time.Millisecond, o.at)
		}
		time.Sleep(250*time.Millisecond - time.Since(begin))
		// The last first: each give-back is then of the trailing one.
		for _, gone := range []struct {
			cancel func()
			w      <-chan outcome
		}{{cancel4, w4}, {cancel3, w3}} {
			gone.cancel()
			assert.ErrorIs(t, (<-gone.w).err, context.Canceled)
			synctest.Wait() // the give-back's call
		}
		require.Equal(t, uint64(2), l.Stats().GivenBack)

		require.NoError(t, c.FlushAll(context.Background()).Err())
		o := <-acquire(context.Background())
		require.NoError(t, o.err)
		assert.Equal(t, 300*time.Millisecond, o.at)
	})
}

// A Refund lowers the floor to what was held before the refunded grant:
// at 10/s, burst 2, two grants at 0, the second refunded, then the key is
// lost: one unit is left, as if nothing had been lost, and the next is
// 100 ms away. A floor that kept the refunded grant would refuse the
// first; no floor would admit both.
func TestAFloorLeavesOutARefundedGrant(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "floor-refund", algorithms.PerSecond(10), 2)
		_, err := l.TryAcquireGrant(1)
		require.NoError(t, err)
		g, err := l.TryAcquireGrant(1)
		require.NoError(t, err)
		require.True(t, l.Refund(g))
		require.NoError(t, c.FlushAll(context.Background()).Err())
		_, err = l.TryAcquire(1)
		require.NoError(t, err, "the refunded unit")
		_, err = l.TryAcquire(1)
		assert.Equal(t, 100*time.Millisecond, retryAfter(t, err))
	})
}

// What a lost key costs when this process holds no reservation on it: a
// Limiter keeps its key's floor, so the grants it made count still; a
// Keyed forgets a key it holds nothing for, floor and all, so the key
// starts empty: at most the one burst it granted last is admitted again.
func TestALostKeyCostsAKeyedTheBurstItGrantedLastAndALimiterNothing(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		rate := algorithms.PerSecond(10)
		l := vlimiter(t, c, "floor-kept", rate, 2)
		k, err := redislimit.NewKeyed(c, "floor:", rate, 2, redislimit.WithServerClock(vnow))
		require.NoError(t, err)
		t.Cleanup(func() { k.Close() })
		for range 2 {
			_, err = l.TryAcquire(1)
			require.NoError(t, err)
			_, err = k.TryAcquire("k", 1)
			require.NoError(t, err)
		}
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, c.FlushAll(context.Background()).Err())
		_, err = l.TryAcquire(1)
		assert.Equal(t, 50*time.Millisecond, retryAfter(t, err), "the Limiter's floor: the TAT at 200 ms")
		for range 2 {
			_, err = k.TryAcquire("k", 1)
			require.NoError(t, err, "the Keyed's key starts empty")
		}
		_, err = k.TryAcquire("k", 1)
		assert.Equal(t, 100*time.Millisecond, retryAfter(t, err))
	})
}
