package redislimit_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

func TestWindowEdgeNewWindowBadInput(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	for _, tc := range []struct {
		name  string
		c     redis.UniversalClient
		key   string
		limit algorithms.Rate
	}{
		{"nil client", nil, "k", algorithms.PerSecond(1)},
		{"typed nil client", (*redis.Client)(nil), "k", algorithms.PerSecond(1)},
		{"typed nil cluster client", (*redis.ClusterClient)(nil), "k", algorithms.PerSecond(1)},
		{"typed nil ring", (*redis.Ring)(nil), "k", algorithms.PerSecond(1)},
		{"empty key", c, "", algorithms.PerSecond(1)},
		{"zero count", c, "k", algorithms.Rate{Count: 0, Per: time.Second}},
		{"negative count", c, "k", algorithms.Rate{Count: -5, Per: time.Second}},
		{"zero per", c, "k", algorithms.Rate{Count: 1, Per: 0}},
		{"negative per", c, "k", algorithms.Rate{Count: 1, Per: -time.Second}},
		{"count 2^51", c, "k", algorithms.Rate{Count: 1 << 51, Per: time.Second}},
		{"count MaxInt64", c, "k", algorithms.Rate{Count: 1<<63 - 1, Per: time.Second}},
		{"per 2^60", c, "k", algorithms.Rate{Count: 1, Per: 1 << 60}},
		{"per MaxInt64", c, "k", algorithms.Rate{Count: 1, Per: 1<<63 - 1}},
	} {
		w, err := redislimit.NewWindow(tc.c, tc.key, tc.limit)
		assert.ErrorIs(t, err, permits.ErrInvalidConfig, tc.name)
		assert.Nil(t, w, tc.name)
		if w != nil {
			w.Close()
		}
	}
	for _, o := range [][2]int64{{0, 1}, {2, 1}, {-1, 2}, {0, 0}, {1, 0}} {
		_, err := redislimit.NewWindow(c, "k", algorithms.PerSecond(1), redislimit.WithFailOpen(o[0], o[1]))
		assert.ErrorIs(t, err, permits.ErrInvalidConfig, "WithFailOpen(%d, %d)", o[0], o[1])
	}
	w, err := redislimit.NewWindow(c, "k-nil-opt", algorithms.PerSecond(1), nil)
	require.NoError(t, err, "nil options are ignored")
	w.Close()
}

// The largest limit and window NewWindow accepts work exactly.
func TestWindowEdgeHugeLimitsWork(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		big := int64(1<<51 - 1)
		w := vwindow(t, c, "big", algorithms.Rate{Count: big, Per: time.Minute})
		_, err := w.TryAcquire(big - 1)
		require.NoError(t, err)
		_, err = w.TryAcquire(1)
		require.NoError(t, err)
		_, err = w.TryAcquire(1)
		assert.Equal(t, time.Minute, retryAfter(t, err))
		_, err = w.TryAcquire(big + 1)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)

		long := algorithms.Rate{Count: 3, Per: 35 * 365 * 24 * time.Hour}
		lw := vwindow(t, c, "long", long)
		begin := time.Now()
		g, err := lw.TryAcquireGrant(3)
		require.NoError(t, err)
		_, err = lw.TryAcquire(1)
		assert.Equal(t, long.Per, retryAfter(t, err))
		pttl, err := c.PTTL(context.Background(), "long").Result()
		require.NoError(t, err)
		assert.InDelta(t, float64(long.Per), float64(pttl), float64(time.Second))
		require.NoError(t, lw.Settle(g, 1))
		_, err = lw.TryAcquire(2)
		require.NoError(t, err)
		assert.Equal(t, begin, time.Now())
	})
}

func TestWindowEdgeBadCostsAreRefusedWithoutACall(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		w := vwindow(t, c, "costs", algorithms.Rate{Count: 10, Per: time.Second})
		ctx := context.Background()
		for _, cost := range []int64{0, -1, -1 << 63} {
			_, err := w.TryAcquire(cost)
			assert.ErrorIs(t, err, permits.ErrInvalidCost, "TryAcquire(%d)", cost)
			_, err = w.Acquire(ctx, cost)
			assert.ErrorIs(t, err, permits.ErrInvalidCost, "Acquire(%d)", cost)
			_, err = w.AcquireGrant(ctx, cost)
			assert.ErrorIs(t, err, permits.ErrInvalidCost, "AcquireGrant(%d)", cost)
			_, err = w.TryAcquireGrant(cost)
			assert.ErrorIs(t, err, permits.ErrInvalidCost, "TryAcquireGrant(%d)", cost)
		}
		for _, cost := range []int64{11, 1 << 62, 1<<63 - 1} {
			_, err := w.TryAcquire(cost)
			assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity, "TryAcquire(%d)", cost)
			_, err = w.Acquire(ctx, cost)
			assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity, "Acquire(%d)", cost)
			cctx, cancel := context.WithCancel(ctx)
			_, err = w.AcquireGrant(cctx, cost)
			cancel()
			assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity, "AcquireGrant(%d)", cost)
		}
		dctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := w.Acquire(dctx, 1)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, w.Stats().Calls, "nothing was sent")
		g, err := w.TryAcquireGrant(5)
		require.NoError(t, err)
		assert.ErrorIs(t, w.Settle(g, -1), permits.ErrInvalidCost)
		assert.ErrorIs(t, w.Settle(g, -1<<63), permits.ErrInvalidCost)
		require.NoError(t, w.Settle(g, 0), "the grant is still to settle after refused settlements")
		_, err = w.TryAcquire(10)
		assert.NoError(t, err)
	})
}

// Settle and Refund twice, across, of foreign and zero grants.
func TestWindowEdgeSettleAndRefundOnceAndOnlyTheirOwn(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 10, Per: time.Second}
		a, b := vwindow(t, c, "own", limit), vwindow(t, c, "own", limit)
		other := vwindow(t, c, "own-other", limit)
		gcra := vlimiter(t, c, "own-gcra", algorithms.PerSecond(10), 10)

		ga, err := a.TryAcquireGrant(4)
		require.NoError(t, err)
		gb, err := b.TryAcquireGrant(4)
		require.NoError(t, err)
		gl, err := gcra.TryAcquireGrant(1)
		require.NoError(t, err)

		for name, g := range map[string]permits.Grant{"b's grant": gb, "a grant of another key": {}, "a GCRA's grant": gl} {
			assert.ErrorIs(t, a.Settle(g, 0), permits.ErrUnknownGrant, name)
			assert.False(t, a.Refund(g), name)
		}
		go1, err := other.TryAcquireGrant(1)
		require.NoError(t, err)
		assert.ErrorIs(t, a.Settle(go1, 0), permits.ErrUnknownGrant, "a grant of a Window on another key")
		assert.False(t, a.Refund(go1))
		assert.False(t, gcra.Refund(ga), "a GCRA does not refund a window's grant")

		_, err = a.TryAcquire(3)
		assert.Error(t, err, "8 of 10 used: nothing was settled")

		require.NoError(t, a.Settle(ga, 1))
		assert.ErrorIs(t, a.Settle(ga, 1), permits.ErrUnknownGrant, "twice")
		assert.ErrorIs(t, a.Settle(ga, 4), permits.ErrUnknownGrant, "twice, for the estimate")
		assert.False(t, a.Refund(ga), "refund after settle")
		assert.True(t, b.Refund(gb))
		assert.False(t, b.Refund(gb), "twice")
		assert.ErrorIs(t, b.Settle(gb, 0), permits.ErrUnknownGrant, "settle after refund")
		_, err = b.TryAcquire(9)
		require.NoError(t, err, "1 of a's and nothing of b's in the window")
		_, err = a.TryAcquire(1)
		assert.Error(t, err)
		st := a.Stats()
		assert.Equal(t, uint64(1), st.Refunded)
		assert.Equal(t, uint64(1), b.Stats().Refunded)

		// A settlement of a grant that has left the window has no effect
		// and is no error, and a refund gives nothing back.
		time.Sleep(time.Second)
		g2, err := a.TryAcquireGrant(5)
		require.NoError(t, err)
		time.Sleep(500 * time.Millisecond)
		g3, err := b.TryAcquireGrant(5)
		require.NoError(t, err)
		time.Sleep(500 * time.Millisecond) // g2 has left at 2s
		assert.NoError(t, a.Settle(g2, 100))
		assert.False(t, a.Refund(g2))
		_, err = a.TryAcquire(5)
		require.NoError(t, err, "g2's settlement for more did nothing")
		_, err = a.TryAcquire(1)
		assert.Equal(t, 500*time.Millisecond, retryAfter(t, err), "g3 leaves at 2.5s")
		require.NoError(t, b.Settle(g3, 2))
		_, err = a.TryAcquire(3)
		require.NoError(t, err, "g3 settled for 2")
		assert.Equal(t, uint64(2), a.Stats().Refunded+b.Stats().Refunded-1)
	})
}

// RetryAfter is exact, to the µs, whatever process admitted what.
func TestWindowEdgeRetryAfterIsExactAcrossProcesses(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 10, Per: time.Second}
		a, b, d := vwindow(t, c, "exact", limit), vwindow(t, c, "exact", limit), vwindow(t, c, "exact", limit)
		_, err := a.TryAcquire(4)
		require.NoError(t, err)
		time.Sleep(300123 * time.Microsecond)
		_, err = b.TryAcquire(6)
		require.NoError(t, err)
		time.Sleep(200001 * time.Microsecond) // at 500.124ms
		_, err = d.TryAcquire(4)
		assert.Equal(t, 499876*time.Microsecond, retryAfter(t, err), "the 4 leave at 1s")
		_, err = d.TryAcquire(5)
		assert.Equal(t, 799999*time.Microsecond, retryAfter(t, err), "the 6 leave at 1.300123s")
		_, err = a.TryAcquire(10)
		assert.Equal(t, 799999*time.Microsecond, retryAfter(t, err))
		// A debt: 3 settled at 15.
		time.Sleep(time.Second) // at 1.500124: the 6 are in the window until 1.300123? no: gone.
		g, err := a.TryAcquireGrant(3)
		require.NoError(t, err)
		require.NoError(t, a.Settle(g, 15))
		time.Sleep(100 * time.Millisecond)
		_, err = b.TryAcquire(1)
		assert.Equal(t, 900*time.Millisecond, retryAfter(t, err), "the debt leaves a window after its grant")
		got := <-start(time.Now(), func() error { _, err := d.Acquire(context.Background(), 10); return err })
		require.NoError(t, got.err)
		assert.Equal(t, 900*time.Millisecond, got.at)
	})
}

// Pause holds every process, from any process's Acquire.
func TestWindowEdgePauseThenAcquireInEveryProcess(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 10, Per: time.Second}
		a, b := vwindow(t, c, "pz", limit), vwindow(t, c, "pz", limit)
		begin := time.Now()
		require.NoError(t, a.Pause(begin.Add(700*time.Millisecond)))
		_, err := b.TryAcquire(1)
		assert.Equal(t, 700*time.Millisecond, retryAfter(t, err), "b's first call learns of the pause")
		_, err = a.TryAcquire(1)
		assert.Equal(t, 700*time.Millisecond, retryAfter(t, err))
		ga := start(begin, func() error { _, err := a.Acquire(context.Background(), 5); return err })
		gb := start(begin, func() error { _, err := b.Acquire(context.Background(), 5); return err })
		oa, ob := <-ga, <-gb
		require.NoError(t, oa.err)
		require.NoError(t, ob.err)
		assert.Equal(t, 700*time.Millisecond, oa.at)
		assert.Equal(t, 700*time.Millisecond, ob.at)
		_, err = a.TryAcquire(1)
		assert.Equal(t, time.Second, retryAfter(t, err))

		// A long pause (a Retry-After of centuries, or "until further
		// notice") holds too.
		long := time.Now().Add(270 * 365 * 24 * time.Hour)
		fresh := vwindow(t, c, "pz-long", limit)
		require.NoError(t, fresh.Pause(long))
		_, err = fresh.TryAcquire(1)
		var rl *permits.RateLimitError
		if assert.ErrorAs(t, err, &rl, "admitted inside a pause before any call") {
			assert.Greater(t, rl.RetryAfter, 200*365*24*time.Hour)
		}
		other := vwindow(t, c, "pz-long2", limit)
		_, err = other.TryAcquire(1) // the key's offset is known
		require.NoError(t, err)
		require.NoError(t, other.Pause(long))
		_, err = other.TryAcquire(1)
		if assert.ErrorAs(t, err, &rl, "admitted inside a pause after a call") {
			assert.Greater(t, rl.RetryAfter, 200*365*24*time.Hour)
		}
		_ = synctest.Wait
		_ = errors.Is
	})
}
