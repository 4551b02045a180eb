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
	"github.com/sluicehq/sluice/redislimit"
)

// Three findings of a review of Window, each a waiter that hung or an
// owner that spun before its fix.

// A call that would carry only moves is not made: the reservations it
// would have asked about stay due at their instants.
func TestWindowACallOfOnlyMovesLeavesNoWaiterHanging(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		var holding atomic.Bool
		hold, held := make(chan struct{}), make(chan struct{}, 1)
		w := vwindow(t, c, "only-moves", algorithms.Rate{Count: 10, Per: time.Second}, redislimit.WithBeforeCall(func() {
			if holding.CompareAndSwap(true, false) {
				held <- struct{}{}
				<-hold
			}
		}))
		begin := time.Now()
		_, err := w.TryAcquire(10)
		require.NoError(t, err)
		a := start(begin, func() error { _, err := w.Acquire(context.Background(), 4); return err })
		synctest.Wait()
		ctxC, cancelC := context.WithCancel(context.Background())
		cc := start(begin, func() error { _, err := w.Acquire(ctxC, 4); return err })
		synctest.Wait()
		holding.Store(true)
		b := start(begin, func() error { _, err := w.Acquire(context.Background(), 4); return err })
		<-held // B's call is under way
		cancelC()
		<-cc
		d := start(begin, func() error { _, err := w.Acquire(context.Background(), 1); return err })
		synctest.Wait()
		close(hold)
		for i, ch := range []<-chan outcome{a, b, d} {
			select {
			case o := <-ch:
				require.NoError(t, o.err, "waiter %d", i)
				assert.LessOrEqual(t, o.at, 2*time.Second, "waiter %d", i)
			case <-time.After(10 * time.Second):
				t.Fatalf("waiter %d hangs; stats %+v", i, w.Stats())
			}
		}
	})
}

// A call that fails with an error reply while it asks a reservation to
// move leaves the reservation where it was, and its waiter is granted
// there (here as soon as the failure is known, its instant having passed).
func TestWindowAFailedMoveLeavesTheReservationDue(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		var corrupt atomic.Bool
		w := vwindow(t, c, "failed-move", algorithms.Rate{Count: 10, Per: time.Second}, redislimit.WithCallTimeout(10*time.Second),
			redislimit.WithProbeInterval(0), redislimit.WithBeforeCall(func() {
				if corrupt.CompareAndSwap(true, false) {
					require.NoError(t, c.HSet(context.Background(), "failed-move", "hold", "x").Err())
					time.Sleep(1500 * time.Millisecond) // A's instant passes while its move is asked
				}
			}))
		begin := time.Now()
		_, err := w.TryAcquire(10)
		require.NoError(t, err)
		a := start(begin, func() error { _, err := w.Acquire(context.Background(), 4); return err })
		synctest.Wait() // reserved at 1s
		corrupt.Store(true)
		b := start(begin, func() error { _, err := w.Acquire(context.Background(), 4); return err })
		assert.ErrorIs(t, (<-b).err, redislimit.ErrUnavailable, "the key does not hold a window")
		select {
		case o := <-a:
			require.NoError(t, o.err)
			assert.Equal(t, 1500*time.Millisecond, o.at)
		case <-time.After(20 * time.Second):
			t.Fatalf("A hangs; stats %+v", w.Stats())
		}
	})
}

// A give-back that Redis refuses with an error reply is not tried again
// and again: the reservation stays counted until it leaves the window.
func TestWindowAGiveBackRedisRefusesIsNotRetriedInALoop(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		w := vwindow(t, c, "refused-give", algorithms.Rate{Count: 10, Per: time.Second}, redislimit.WithProbeInterval(0))
		begin := time.Now()
		_, err := w.TryAcquire(10)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		a := start(begin, func() error { _, err := w.Acquire(ctx, 4); return err })
		synctest.Wait()
		require.NoError(t, c.HSet(context.Background(), "refused-give", "hold", "x").Err())
		before := w.Stats().Calls
		cancel()
		<-a
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.LessOrEqual(t, w.Stats().Calls-before, uint64(1), "one give-back tried")
	})
}
