package redislimit_test

import (
	"context"
	"sync/atomic"
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

// Close fails every waiter, reserved or in a call under way, and every
// Settle, Refund and Pause waiting, with ErrClosed; later calls fail with
// it too.
func TestWindowEdgeCloseDuringWaits(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		var holding atomic.Bool
		g := newGate()
		w, err := redislimit.NewWindow(c, "closew", algorithms.Rate{Count: 10, Per: time.Second}, redislimit.WithServerClock(vnow),
			redislimit.WithBeforeCall(func() {
				if holding.Load() {
					g.hold()
				}
			}))
		require.NoError(t, err)
		begin := time.Now()
		gr, err := w.TryAcquireGrant(10)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		reserved := start(begin, func() error { _, err := w.Acquire(ctx, 5); return err })
		reserved2 := start(begin, func() error { _, err := w.Acquire(context.Background(), 5); return err })
		synctest.Wait()
		holding.Store(true)
		inCall := start(begin, func() error { _, err := w.Acquire(ctx, 3); return err })
		release := g.next() // its call is held
		behind := start(begin, func() error { _, err := w.Acquire(ctx, 2); return err })
		settle := start(begin, func() error { return w.Settle(gr, 1) })
		pause := start(begin, func() error { return w.Pause(begin.Add(time.Hour)) })
		synctest.Wait()
		closed := make(chan error, 1)
		go func() { closed <- w.Close() }()
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		close(release)
		holding.Store(false)
		require.NoError(t, <-closed)
		for name, ch := range map[string]<-chan outcome{"reserved": reserved, "reserved, no ctx": reserved2, "in a call": inCall, "behind": behind, "settle": settle, "pause": pause} {
			o := <-ch
			assert.ErrorIs(t, o.err, permits.ErrClosed, name)
		}
		_, err = w.Acquire(context.Background(), 1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		_, err = w.AcquireGrant(ctx, 1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		_, err = w.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		_, err = w.TryAcquireGrant(1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		assert.ErrorIs(t, w.Settle(gr, 0), permits.ErrClosed)
		assert.False(t, w.Refund(gr))
		assert.ErrorIs(t, w.Pause(time.Now().Add(time.Hour)), permits.ErrClosed)
		assert.NoError(t, w.Close(), "idempotent")
		st := w.Stats()
		assert.Zero(t, st.Waiting)
		assert.Equal(t, uint64(1), st.Granted)
	})
}

// A waiter that holds a reservation is failed by Close at once, though a
// call to Redis is stuck (here, Redis is paused for writes): Close does not
// leave its callers waiting on Redis.
func TestWindowEdgeCloseDoesNotWaitOnAStuckRedisToFailWaiters(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, patient)
	admin := s.Client(t)
	ctx := context.Background()
	w, err := redislimit.NewWindow(c, "close-stuck", algorithms.Rate{Count: 1, Per: 10 * time.Second}, redislimit.WithCallTimeout(500*time.Millisecond))
	require.NoError(t, err)
	_, err = w.TryAcquire(1)
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	begin := time.Now()
	reserved := start(begin, func() error { _, err := w.Acquire(cctx, 1); return err })
	for w.Stats().Decided < 2 {
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", pauseMs, "WRITE").Err())
	defer admin.Do(ctx, "CLIENT", "UNPAUSE")
	stuck := start(begin, func() error { _, err := w.Acquire(cctx, 1); return err })
	for w.Stats().Calls < 3 {
		time.Sleep(time.Millisecond)
	}
	t0 := time.Now()
	closeDone := start(begin, func() error { return w.Close() })
	o := <-reserved
	waited := time.Since(t0)
	assert.ErrorIs(t, o.err, permits.ErrClosed)
	assert.Less(t, waited, waitedForRedis, "the reserved waiter waited on Close for the stuck call")
	o = <-stuck
	assert.Less(t, time.Since(t0), waitedForRedis, "the waiter in the stuck call waited for Redis after Close: %v", o.err)
	require.NoError(t, admin.Do(ctx, "CLIENT", "UNPAUSE").Err())
	<-closeDone
	t.Logf("Close took %v", time.Since(t0))
}
