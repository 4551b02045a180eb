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
	"github.com/sluicehq/sluice/redislimit"
)

// After SCRIPT FLUSH, a call that carries a settlement, a move and a
// request is sent again with EVAL and applied once.
func TestWindowEdgeScriptFlushCallWithSettleMoveAndRequest(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 10, Per: time.Second}
		a, b := vwindow(t, c, "flushw", limit), vwindow(t, c, "flushw", limit)
		begin := time.Now()
		gb, err := b.TryAcquireGrant(2)
		require.NoError(t, err)
		ga, err := a.TryAcquireGrant(8)
		require.NoError(t, err)
		waiter := start(begin, func() error { _, err := b.Acquire(context.Background(), 4); return err })
		synctest.Wait() // reserved at 1s
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, a.Settle(ga, 1)) // room for 4 now
		require.NoError(t, c.ScriptFlush(context.Background()).Err())
		calls := b.Stats().Calls
		tried := start(begin, func() error { _, err := b.TryAcquire(1); return err })
		require.NoError(t, b.Settle(gb, 0)) // with the move
		<-tried
		got := <-waiter
		require.NoError(t, got.err)
		assert.Equal(t, 100*time.Millisecond, got.at, "moved")
		st := b.Stats()
		assert.Equal(t, uint64(1), st.Refunded, "the settlement, once")
		assert.Equal(t, uint64(1), st.Moved)
		assert.LessOrEqual(t, st.Calls-calls, uint64(4))
		_, err = a.TryAcquire(5)
		require.NoError(t, err, "1 + 0 + 4 in the window")
		_, err = a.TryAcquire(1)
		assert.Equal(t, 900*time.Millisecond, retryAfter(t, err))
	})
}

// A reservation beyond the caller's deadline fails at once with an exact
// RetryAfter that matches context.DeadlineExceeded; WithMaxWait(0) never
// waits.
func TestWindowEdgeDeadlineAndMaxWait(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 10, Per: time.Second}
		w := vwindow(t, c, "dl", limit)
		nw := vwindow(t, c, "dl", limit, redislimit.WithMaxWait(0))
		begin := time.Now()
		_, err := w.TryAcquire(10)
		require.NoError(t, err)
		time.Sleep(250 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err = w.Acquire(ctx, 1)
		assert.Equal(t, 750*time.Millisecond, retryAfter(t, err))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, begin.Add(250*time.Millisecond), time.Now(), "at once")
		_, err = nw.Acquire(context.Background(), 1)
		assert.Equal(t, 750*time.Millisecond, retryAfter(t, err))
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, begin.Add(250*time.Millisecond), time.Now(), "at once")
		st := w.Stats()
		assert.Equal(t, uint64(1), st.Rejected)
		assert.Equal(t, uint64(1), nw.Stats().Rejected)
		_ = permits.ErrRateLimited
	})
}

// Stats count what the callers saw.
func TestWindowEdgeStatsCountWhatCallersSaw(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 4, Per: time.Second}
		w := vwindow(t, c, "stats", limit)
		begin := time.Now()
		g, err := w.TryAcquireGrant(4)
		require.NoError(t, err)
		_, err = w.TryAcquire(1)
		require.Error(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		first := start(begin, func() error { _, err := w.Acquire(ctx, 4); return err })
		synctest.Wait()
		second := start(begin, func() error { _, err := w.Acquire(context.Background(), 3); return err })
		synctest.Wait()
		st := w.Stats()
		assert.Equal(t, 2, st.Waiting)
		cancel()
		assert.ErrorIs(t, (<-first).err, context.Canceled)
		o := <-second
		require.NoError(t, o.err)
		assert.Equal(t, time.Second, o.at)
		require.NoError(t, w.Settle(g, 2))
		st = w.Stats()
		assert.Equal(t, uint64(2), st.Granted)
		assert.Equal(t, uint64(1), st.Rejected)
		assert.Equal(t, uint64(1), st.Canceled)
		assert.Equal(t, uint64(1), st.HandedOff)
		assert.Equal(t, uint64(3), st.GivenBack)
		assert.Zero(t, st.Refunded, "g left the window at 1s: its settlement had no effect")
		assert.Zero(t, st.Waiting)
		assert.Zero(t, st.Unavailable)
		assert.Zero(t, st.FellOpen)
	})
}
