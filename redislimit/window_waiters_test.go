package redislimit_test

import (
	"context"
	"sort"
	"sync"
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

// Window's waiters across calls to Redis: none hangs, and the owner never
// spins, when a call carries only moves, fails, or meets a pause.

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

// maxInWindow returns the largest count of grants in any window (t-w, t],
// and where it ends.
func maxInWindow(ts []time.Duration, w time.Duration) (int, time.Duration) {
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	best, at := 0, time.Duration(0)
	for i := range ts {
		n := 0
		for j := i; j >= 0 && ts[j] > ts[i]-w; j-- {
			n++
		}
		if n > best {
			best, at = n, ts[i]
		}
	}
	return best, at
}

// A Pause that arrives while a call is under way: the call's admissions
// (made before Redis knew of the pause) become slots before the hold.
func TestWindowAPauseDuringACallHoldsWhatTheCallAdmitted(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		var holdN atomic.Int32
		release := make(chan struct{})
		held := make(chan struct{}, 4)
		w := vwindow(t, c, "pause-mid-call", algorithms.Rate{Count: 20, Per: time.Second}, redislimit.WithBeforeCall(func() {
			if holdN.Load() > 0 {
				holdN.Add(-1)
				held <- struct{}{}
				<-release
			}
		}))
		begin := time.Now()
		var mu sync.Mutex
		var grants []time.Duration
		for i := 0; i < 20; i++ {
			_, err := w.TryAcquire(1)
			require.NoError(t, err)
			grants = append(grants, 0)
		}
		holdN.Store(1)
		var outs []<-chan outcome
		ctx, cancel := context.WithCancel(context.Background()) // via the owner
		defer cancel()
		outs = append(outs, start(begin, func() error { _, err := w.Acquire(ctx, 1); return err }))
		<-held // first call held
		for i := 0; i < 19; i++ {
			outs = append(outs, start(begin, func() error { _, err := w.Acquire(ctx, 1); return err }))
		}
		synctest.Wait()
		holdN.Store(1)
		release <- struct{}{}
		<-held // the 19's call held
		time.Sleep(100 * time.Millisecond)
		perr := make(chan error, 1)
		go func() { perr <- w.Pause(begin.Add(1500 * time.Millisecond)) }()
		synctest.Wait()
		close(release)
		require.NoError(t, <-perr)
		for _, ch := range outs {
			o := <-ch
			require.NoError(t, o.err)
			mu.Lock()
			grants = append(grants, o.at)
			mu.Unlock()
		}
		// later traffic after the window frees
		time.Sleep(time.Until(begin.Add(2 * time.Second)))
		for i := 0; i < 20; i++ {
			if _, err := w.TryAcquire(1); err == nil {
				grants = append(grants, time.Since(begin))
			}
		}
		var inPause int
		for _, g := range grants[20:40] {
			if g < 1500*time.Millisecond {
				inPause++
			}
		}
		t.Logf("grants: %v", grants[20:40])
		n, at := maxInWindow(append([]time.Duration(nil), grants...), time.Second)
		t.Logf("max in a 1s window: %d ending at %v; stats %+v", n, at, w.Stats())
		require.Zero(t, inPause, "grants inside the pause")
		require.LessOrEqual(t, n, 20, "uses in one window")
	})
}

// A waiter a pause sends again sat in the line before a waiter whose
// reservation is after the pause; reassign, run while it was pending,
// dealt it that reservation and left the waiter behind holding it too, so
// that one event was granted twice or three times (21 grants in a window
// of 20). The line is now put back in order, and a waiter behind a stop
// keeps its slot counted.
func TestWindowAWaiterAPauseSendsAgainNeverSharesASlot(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		var holding atomic.Bool
		release := make(chan struct{})
		held := make(chan struct{}, 1)
		w := vwindow(t, c, "hold-reassign", algorithms.Rate{Count: 20, Per: time.Second}, redislimit.WithBeforeCall(func() {
			if holding.CompareAndSwap(true, false) {
				held <- struct{}{}
				<-release
			}
		}))
		begin := time.Now()
		var grants []time.Duration
		for i := 0; i < 17; i++ {
			_, err := w.TryAcquire(1)
			require.NoError(t, err)
			grants = append(grants, 0)
		}
		time.Sleep(500 * time.Millisecond)
		for i := 0; i < 3; i++ {
			_, err := w.TryAcquire(1)
			require.NoError(t, err)
			grants = append(grants, time.Since(begin))
		}
		ctx := context.Background()
		ctxM, cancelM := context.WithCancel(ctx)
		cctx, cc := context.WithCancel(ctx) // cancellable: through the owner
		defer cc()
		var outs []<-chan outcome
		m := start(begin, func() error { _, err := w.Acquire(ctxM, 1); return err })
		synctest.Wait()
		for i := 0; i < 17; i++ { // W2..W17 at 1s, then B at 1.5s
			outs = append(outs, start(begin, func() error { _, err := w.Acquire(cctx, 1); return err }))
			synctest.Wait()
		}
		holding.Store(true)
		outs = append(outs, start(begin, func() error { _, err := w.Acquire(cctx, 1); return err })) // X
		<-held
		perr := make(chan error, 1)
		go func() { perr <- w.Pause(begin.Add(1200 * time.Millisecond)) }()
		synctest.Wait()
		cancelM()
		<-m
		synctest.Wait()
		close(release)
		require.NoError(t, <-perr)
		for i, ch := range outs {
			select {
			case o := <-ch:
				require.NoError(t, o.err, "waiter %d", i)
				grants = append(grants, o.at)
			case <-time.After(30 * time.Second):
				t.Fatalf("waiter %d hangs; stats %+v", i, w.Stats())
			}
		}
		t.Logf("waiters' grants: %v", grants[20:])
		time.Sleep(time.Until(begin.Add(3 * time.Second)))
		for i := 0; i < 25; i++ {
			if _, err := w.TryAcquire(1); err == nil {
				grants = append(grants, time.Since(begin))
			}
		}
		n, at := maxInWindow(append([]time.Duration(nil), grants...), time.Second)
		t.Logf("max in a 1s window: %d ending at %v; stats %+v", n, at, w.Stats())
		require.LessOrEqual(t, n, 20, "uses in one 1s window")
		require.Equal(t, uint64(len(grants)), w.Stats().Granted)
	})
}
