package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
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

// A waiter whose context ends at the very instant its reservation falls
// due either gets the grant, or its reservation is handed on or given
// back: it is never consumed by nobody. Here another process asks for the
// whole window right after that instant: if the waiter did not get its
// grant, the room is free (actor.New(SlidingWindow) grants a waiter whose
// deadline is the instant of its grant; redislimit may instead cancel it,
// but then nothing of it may stay counted).
func TestWindowEdgeCancelAtTheInstantOfTheGrantLosesNoRoom(t *testing.T) {
	var canceled, lost, granted int
	for i := range raceRounds {
		inBubble(t, func(t *testing.T, c *redis.Client) {
			key := fmt.Sprintf("cancel-instant-%d", i)
			limit := algorithms.Rate{Count: 10, Per: time.Second}
			a, b := vwindow(t, c, key, limit), vwindow(t, c, key, limit)
			begin := time.Now()
			_, err := a.TryAcquire(10)
			require.NoError(t, err)
			var ctx context.Context
			var cancel context.CancelFunc
			if i%2 == 0 {
				ctx, cancel = context.WithDeadline(context.Background(), begin.Add(time.Second))
			} else {
				ctx, cancel = context.WithCancel(context.Background())
				time.AfterFunc(time.Second, cancel)
			}
			defer cancel()
			waiter := start(begin, func() error { _, err := a.Acquire(ctx, 10); return err })
			synctest.Wait() // reserved at 1s
			o := <-waiter
			synctest.Wait() // whatever the owner does with a cancellation
			require.Equal(t, time.Second, o.at)
			if o.err == nil {
				granted++
				return
			}
			require.True(t, errors.Is(o.err, context.Canceled) || errors.Is(o.err, context.DeadlineExceeded), "%v", o.err)
			canceled++
			_, err = b.TryAcquire(10)
			if err != nil {
				lost++
				t.Logf("round %d: the waiter failed with %v at 1s, and its 10 units stay counted: %v; stats %+v", i, o.err, err, a.Stats())
			}
		})
	}
	t.Logf("granted %d, canceled %d, of which the room was lost %d", granted, canceled, lost)
	assert.Zero(t, lost, "a canceled waiter's reservation was neither granted, handed on nor given back")
}

var raceRounds = 40

// The same race, forced: the caller gives up at the instant its slot falls
// due, and wins the race against the owner's grant (the hook runs on the
// owner just before it answers). Its reservation must then be handed on or
// given back, as request.go says ("an owner that lost treats what it was
// about to hand over as unused"): here a waiter behind it in the same
// process is to take it at once, and the room of its own reservation goes
// back to the window.
func TestWindowEdgeCancelWinningTheRaceAtItsInstantHandsTheSlotOn(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 10, Per: time.Second}
		var w *redislimit.Window
		ctxA, cancelA := context.WithCancel(context.Background())
		defer cancelA()
		var armed atomic.Bool
		w = vwindow(t, c, "cancel-forced", limit, redislimit.WithBeforeGrant(func(cost int64) {
			if cost == 10 && armed.CompareAndSwap(true, false) {
				cancelA()
				for w.Stats().Canceled == 0 {
					runtime.Gosched() // until the caller has won its CAS
				}
			}
		}))
		other := vwindow(t, c, "cancel-forced", limit)
		begin := time.Now()
		_, err := w.TryAcquire(10)
		require.NoError(t, err)
		a := start(begin, func() error { _, err := w.Acquire(ctxA, 10); return err })
		synctest.Wait() // reserved at 1s
		ctxB, cancelB := context.WithCancel(context.Background())
		defer cancelB()
		b := start(begin, func() error { _, err := w.Acquire(ctxB, 10); return err })
		synctest.Wait() // reserved at 2s
		armed.Store(true)
		oa := <-a
		require.ErrorIs(t, oa.err, context.Canceled)
		assert.Equal(t, time.Second, oa.at)
		select {
		case ob := <-b:
			require.NoError(t, ob.err)
			assert.Equal(t, time.Second, ob.at, "B takes the slot A gave up at its instant")
		case <-time.After(500 * time.Millisecond):
			cancelB()
			<-b
			synctest.Wait()
			_, err := other.TryAcquire(10)
			t.Errorf("B was not handed A's slot at 1s, and the room is %v; stats %+v", err, w.Stats())
		}
	})
}

// A waiter handed a larger reservation than its cost counts only its cost:
// the rest of the room is another caller's, as in
// actor.New(SlidingWindow), where the waiter behind is admitted for its
// own cost.
func TestWindowEdgeHandedOnReservationCountsOnlyTheCost(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 4, Per: time.Second}
		w, other := vwindow(t, c, "handed-cost", limit), vwindow(t, c, "handed-cost", limit)
		begin := time.Now()
		_, err := w.TryAcquire(4)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		first := start(begin, func() error { _, err := w.Acquire(ctx, 4); return err })
		synctest.Wait() // reserved at 1s
		var g permits.Grant
		second := start(begin, func() error { var err error; g, err = w.AcquireGrant(context.Background(), 3); return err })
		synctest.Wait() // reserved at 2s
		cancel()
		require.ErrorIs(t, (<-first).err, context.Canceled)
		o := <-second
		require.NoError(t, o.err)
		require.Equal(t, time.Second, o.at)
		assert.Equal(t, int64(3), g.Cost())
		synctest.Wait()
		_, err = other.TryAcquire(1)
		assert.NoError(t, err, "3 of 4 in the window at 1s")
	})
}

// The call that takes a handed-on event down to its holder's cost can
// fail (here the key holds something else for that one call): the trim
// goes again with the next call, and the window then counts only what was
// granted.
func TestWindowEdgeATrimGoesAgainAfterAFailedCall(t *testing.T) {
	s := redistest.Test(t)
	admin := s.Client(t)
	ctx0 := context.Background()
	synctest.Test(t, func(t *testing.T) {
		c := s.NewClient()
		t.Cleanup(func() { c.Close() })
		limit := algorithms.Rate{Count: 4, Per: time.Second}
		var kill atomic.Bool
		w := vwindow(t, c, "trim-again", limit, redislimit.WithBeforeCall(func() {
			if kill.CompareAndSwap(true, false) {
				require.NoError(t, admin.Rename(ctx0, "trim-again", "trim-saved").Err())
				require.NoError(t, admin.Set(ctx0, "trim-again", "not a window", 0).Err())
			}
		}))
		begin := time.Now()
		_, err := w.TryAcquire(4)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		first := start(begin, func() error { _, err := w.Acquire(ctx, 4); return err })
		synctest.Wait() // reserved at 1s
		second := start(begin, func() error { _, err := w.Acquire(context.Background(), 3); return err })
		synctest.Wait() // reserved at 2s
		cancel()
		require.ErrorIs(t, (<-first).err, context.Canceled)
		synctest.Wait() // the second holds the first's slot; its own went back
		calls := w.Stats().Calls
		kill.Store(true)
		o := <-second
		require.NoError(t, o.err)
		require.Equal(t, time.Second, o.at)
		synctest.Wait()
		require.Equal(t, calls+1, w.Stats().Calls, "the trim's call was made")
		require.False(t, kill.Load(), "and failed: the key held a string")
		require.NoError(t, admin.Rename(ctx0, "trim-saved", "trim-again").Err())
		event := func() string { // the first waiter's event, the second of the key
			v, err := admin.HGet(ctx0, "trim-again", "2").Result()
			require.NoError(t, err)
			return v[strings.Index(v, ":")+1:]
		}
		require.Equal(t, "4:0", event(), "the failed call took nothing down")

		time.Sleep(300 * time.Millisecond)
		_, err = w.TryAcquire(1)
		assert.NoError(t, err, "3 of 4 in the window at 1.3s, once the trim went again")
		assert.Equal(t, "3:0", event())
	})
}
