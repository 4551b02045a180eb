package redislimit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// vwindow is a Window on the bubble's clock, closed when t ends. Two made
// on one key stand for two processes sharing it.
func vwindow(t *testing.T, c redis.UniversalClient, key string, limit algorithms.Rate, opts ...redislimit.Option) *redislimit.Window {
	t.Helper()
	w, err := redislimit.NewWindow(c, key, limit, append([]redislimit.Option{redislimit.WithServerClock(vnow)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	return w
}

// retryAfter returns the RetryAfter of a refusal, failing the test for
// anything else.
func retryAfter(t *testing.T, err error) time.Duration {
	t.Helper()
	var rl *permits.RateLimitError
	require.ErrorAs(t, err, &rl)
	return rl.RetryAfter
}

func TestWindowAdmitsTheLimitInAnyWindowAndReservesWhenTheOldestLeave(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		w := vwindow(t, c, "win", algorithms.Rate{Count: 10, Per: time.Second})
		begin := time.Now()
		_, err := w.TryAcquire(6)
		require.NoError(t, err)
		time.Sleep(300 * time.Millisecond)
		_, err = w.TryAcquire(4)
		require.NoError(t, err, "10 in the window: the limit")
		_, err = w.TryAcquire(1)
		assert.Equal(t, 700*time.Millisecond, retryAfter(t, err), "the first 6 leave at 1s")

		// 5 fit once the 6 admitted at 0 have left: at 1s exactly, not
		// when all 10 have.
		got := <-start(begin, func() error { _, err := w.Acquire(context.Background(), 5); return err })
		require.NoError(t, got.err)
		assert.Equal(t, time.Second, got.at)
		_, err = w.TryAcquire(2)
		assert.Equal(t, 300*time.Millisecond, retryAfter(t, err), "4 (at 0.3s) and 5 (at 1s) are in the window until 1.3s")

		_, err = w.TryAcquire(11)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity, "above the limit: never sent")
	})
}

func TestWindowSettleForLessGivesTheDifferenceToEveryProcess(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 10, Per: time.Second}
		a, b := vwindow(t, c, "share", limit), vwindow(t, c, "share", limit)
		g, err := a.TryAcquireGrant(10) // the estimate
		require.NoError(t, err)
		_, err = b.TryAcquire(1)
		require.Error(t, err, "the window is full")

		require.NoError(t, a.Settle(g, 4)) // the call used 4
		_, err = b.TryAcquire(6)
		require.NoError(t, err, "the 6 A did not use are B's now")
		_, err = b.TryAcquire(1)
		assert.Equal(t, time.Second, retryAfter(t, err), "4 and 6 at 0: full until 1s")

		assert.ErrorIs(t, a.Settle(g, 2), permits.ErrUnknownGrant, "once")
		assert.False(t, a.Refund(g), "a settled grant is not refunded")
		assert.ErrorIs(t, b.Settle(g, 2), permits.ErrUnknownGrant, "another limiter's grant")
		assert.ErrorIs(t, a.Settle(g, -1), permits.ErrInvalidCost)
		assert.Equal(t, uint64(1), a.Stats().Refunded)
	})
}

func TestWindowSettleForMoreIsADebtLaterAdmissionsWaitFor(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		w := vwindow(t, c, "debt", algorithms.Rate{Count: 10, Per: time.Second})
		begin := time.Now()
		g, err := w.TryAcquireGrant(3)
		require.NoError(t, err)
		require.NoError(t, w.Settle(g, 14), "it used 14")
		_, err = w.TryAcquire(1)
		assert.Equal(t, time.Second, retryAfter(t, err), "14 at 0 is in the window until 1s")
		got := <-start(begin, func() error { _, err := w.Acquire(context.Background(), 10); return err })
		require.NoError(t, got.err)
		assert.Equal(t, time.Second, got.at)
	})
}

func TestWindowRefundTakesAGrantOutWhateverWasAdmittedSince(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 10, Per: time.Second}
		a, b := vwindow(t, c, "refund", limit), vwindow(t, c, "refund", limit)
		g, err := a.TryAcquireGrant(6)
		require.NoError(t, err)
		_, err = b.TryAcquire(4) // admitted behind it: a GCRA could not give g back now
		require.NoError(t, err)
		assert.True(t, a.Refund(g))
		assert.False(t, a.Refund(g), "once")
		assert.ErrorIs(t, a.Settle(g, 1), permits.ErrUnknownGrant, "a refunded grant is not settled")
		_, err = b.TryAcquire(6)
		assert.NoError(t, err, "the 6 went back")
	})
}

func TestWindowGrantThatLeftTheWindowSettlesWithoutEffect(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		w := vwindow(t, c, "old", algorithms.Rate{Count: 10, Per: time.Second})
		g, err := w.TryAcquireGrant(10)
		require.NoError(t, err)
		pttl, err := c.PTTL(context.Background(), "old").Result()
		require.NoError(t, err)
		assert.InDelta(t, time.Second, pttl, float64(5*time.Millisecond), "the key expires when its last admission leaves the window")
		time.Sleep(time.Second)
		// Redis expires keys on its own clock, not the bubble's: do what
		// it would have done by now.
		require.NoError(t, c.Del(context.Background(), "old").Err())

		g2, err := w.TryAcquireGrant(10) // the key made afresh: its first event again
		require.NoError(t, err)
		assert.NoError(t, w.Settle(g, 0), "nothing left to settle")
		assert.False(t, w.Refund(g))
		_, err = w.TryAcquire(1)
		require.Error(t, err, "the stale grant did not touch the new key's first event")
		require.NoError(t, w.Settle(g2, 0))
		_, err = w.TryAcquire(10)
		assert.NoError(t, err)
	})
}

func TestWindowGivesBackTheReservationOfAWaiterThatGaveUp(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 10, Per: time.Second}
		a, b := vwindow(t, c, "gone", limit), vwindow(t, c, "gone", limit)
		begin := time.Now()
		_, err := a.TryAcquire(10)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		waiter := start(begin, func() error { _, err := a.Acquire(ctx, 8); return err })
		synctest.Wait() // reserved at 1s
		time.Sleep(500 * time.Millisecond)
		_, err = b.TryAcquire(1)
		assert.Equal(t, 500*time.Millisecond, retryAfter(t, err), "nobody passes a reservation")

		cancel()
		assert.ErrorIs(t, (<-waiter).err, context.Canceled)
		synctest.Wait() // the give-back
		assert.Equal(t, uint64(8), a.Stats().GivenBack)
		time.Sleep(500 * time.Millisecond)
		_, err = b.TryAcquire(10)
		assert.NoError(t, err, "at 1s the whole window is free: the reservation went back")
	})
}

func TestWindowHandsAReservationToTheNextWaiterItCovers(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		w := vwindow(t, c, "hand", algorithms.Rate{Count: 4, Per: time.Second})
		begin := time.Now()
		_, err := w.TryAcquire(4)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		first := start(begin, func() error { _, err := w.Acquire(ctx, 4); return err })
		synctest.Wait() // reserved at 1s
		second := start(begin, func() error { _, err := w.Acquire(context.Background(), 3); return err })
		synctest.Wait() // reserved at 2s
		cancel()
		assert.ErrorIs(t, (<-first).err, context.Canceled)
		got := <-second
		require.NoError(t, got.err)
		assert.Equal(t, time.Second, got.at, "it took the slot at 1s")
		st := w.Stats()
		assert.Equal(t, uint64(1), st.HandedOff)
		assert.Equal(t, uint64(3), st.GivenBack, "its own slot at 2s went back")
	})
}

func TestWindowSettlesThroughAll(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		tokens := vwindow(t, c, "tokens", algorithms.Rate{Count: 100, Per: time.Minute})
		requests := vwindow(t, c, "requests", algorithms.Rate{Count: 5, Per: time.Minute})
		lim := permits.All(permits.FixedCost(requests, 1), tokens)
		p, err := lim.TryAcquire(80)
		require.NoError(t, err)
		require.NoError(t, permits.Settle(p, 30))
		p.Release()
		_, err = tokens.TryAcquire(70)
		assert.NoError(t, err, "30 of the 100 used")
		_, err = requests.TryAcquire(4)
		assert.NoError(t, err, "the request slot is 1 whatever the tokens")
	})
}

func TestWindowAllGivesTheWindowBackWhenAnotherPartFails(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		w := vwindow(t, c, "allw", algorithms.Rate{Count: 10, Per: time.Second})
		lim := permits.All(w, permits.FixedCost(refuser{}, 1))
		_, err := lim.TryAcquire(10)
		require.ErrorIs(t, err, permits.ErrRateLimited)
		_, err = w.TryAcquire(10)
		assert.NoError(t, err, "the window's grant was refunded")
	})
}

func TestWindowCloseFailsWaitersAndSettles(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		w, err := redislimit.NewWindow(c, "closing", algorithms.Rate{Count: 1, Per: time.Second}, redislimit.WithServerClock(vnow))
		require.NoError(t, err)
		g, err := w.TryAcquireGrant(1)
		require.NoError(t, err)
		waiter := start(time.Now(), func() error { _, err := w.Acquire(context.Background(), 1); return err })
		synctest.Wait()
		require.NoError(t, w.Close())
		assert.ErrorIs(t, (<-waiter).err, permits.ErrClosed)
		assert.ErrorIs(t, w.Settle(g, 0), permits.ErrClosed)
		_, err = w.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrClosed)
	})
}

func TestNewWindowRefusesBadConfig(t *testing.T) {
	c := redistest.Test(t).Client(t)
	for _, tc := range []struct {
		name  string
		c     redis.UniversalClient
		key   string
		limit algorithms.Rate
	}{
		{"nil client", nil, "k", algorithms.PerSecond(1)},
		{"empty key", c, "", algorithms.PerSecond(1)},
		{"zero count", c, "k", algorithms.Rate{Count: 0, Per: time.Second}},
		{"negative window", c, "k", algorithms.Rate{Count: 1, Per: -time.Second}},
		{"count beyond exact", c, "k", algorithms.Rate{Count: 1 << 60, Per: time.Second}},
	} {
		_, err := redislimit.NewWindow(tc.c, tc.key, tc.limit)
		assert.ErrorIs(t, err, permits.ErrInvalidConfig, tc.name)
	}
	_, err := redislimit.NewWindow(c, "k", algorithms.PerSecond(1), redislimit.WithFailOpen(2, 1))
	assert.ErrorIs(t, err, permits.ErrInvalidConfig, "a bad fail-open share")
}

func TestWindowRedisDownFailsSettleWithUnavailable(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, noRetries)
	w, err := redislimit.NewWindow(c, "wdown", algorithms.Rate{Count: 10, Per: time.Minute}, redislimit.WithProbeInterval(0))
	require.NoError(t, err)
	defer w.Close()
	g, err := w.TryAcquireGrant(5)
	require.NoError(t, err)
	s.Kill()
	assert.ErrorIs(t, w.Settle(g, 1), redislimit.ErrUnavailable)
	_, err = w.TryAcquire(1)
	assert.ErrorIs(t, err, redislimit.ErrUnavailable)
	require.NoError(t, s.Restart())
	// The restarted server lost the window: the grant is gone with it.
	assert.NoError(t, w.Settle(g, 1))
	_, err = w.TryAcquire(10)
	assert.NoError(t, err)
}

func TestWindowFailOpenUsesTheLocalShare(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, noRetries)
	w, err := redislimit.NewWindow(c, "wopen", algorithms.Rate{Count: 9, Per: time.Minute}, redislimit.WithFailOpen(1, 3))
	require.NoError(t, err)
	defer w.Close()
	s.Kill()
	for range 3 {
		_, err := w.TryAcquire(1)
		require.NoError(t, err, "a third of 9 in process")
	}
	_, err = w.TryAcquire(1)
	assert.ErrorIs(t, err, permits.ErrRateLimited)
	assert.Equal(t, uint64(4), w.Stats().FellOpen)
}

// TestWindowBehavesAsTheInProcessSlidingWindow plays random scripts of
// Acquires with and without deadlines and TryAcquires at distinct instants
// against a Window and against actor.New(SlidingWindow) on the same
// clock, and requires the same outcome for every caller and grants at the
// same instant to within the microsecond Redis counts in.
func TestWindowBehavesAsTheInProcessSlidingWindow(t *testing.T) {
	for _, limit := range []algorithms.Rate{
		{Count: 5, Per: 100 * time.Millisecond},
		{Count: 12, Per: 250 * time.Millisecond},
		{Count: 1, Per: 30 * time.Millisecond},
	} {
		for seed := uint64(1); seed <= uint64(testutil.Volume(3, 30)); seed++ {
			t.Run(fmt.Sprintf("%v seed %d", limit, seed), func(t *testing.T) {
				evs := randomScript(rand.New(rand.NewPCG(seed, 13)), 150, limit.Count, false)
				defer testutil.ReportDecisions(t, int64(len(evs)))
				inBubble(t, func(t *testing.T, c *redis.Client) {
					sw, err := algorithms.NewSlidingWindow(limit)
					require.NoError(t, err)
					ref := actor.MustNew(sw)
					defer ref.Close()
					want := play(ref, evs)
					got := play(vwindow(t, c, "wprop", limit), evs)
					var granted int
					for i := range evs {
						w, g := want[i], got[i]
						if w.granted && g.granted {
							granted++
							require.Less(t, (g.at - w.at).Abs(), time.Microsecond, "event %d %+v: granted at %v, in process at %v", i, evs[i], g.at, w.at)
							continue
						}
						require.Equal(t, w.String(), g.String(), "event %d %+v", i, evs[i])
					}
					require.Positive(t, granted)
				})
			})
		}
	}
}

func TestWindowPauseHoldsEveryProcess(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 10, Per: time.Second}
		a, b := vwindow(t, c, "paused", limit), vwindow(t, c, "paused", limit)
		begin := time.Now()
		_, err := b.TryAcquire(1) // b's offset to Redis is known
		require.NoError(t, err)
		require.NoError(t, a.Pause(begin.Add(500*time.Millisecond))) // a's is not: its wall clock
		require.NoError(t, b.Pause(begin.Add(200*time.Millisecond)), "an earlier pause")
		_, err = b.TryAcquire(1)
		assert.Equal(t, 500*time.Millisecond, retryAfter(t, err), "the earlier pause did not shorten the later")
		got := <-start(begin, func() error { _, err := b.Acquire(context.Background(), 9); return err })
		require.NoError(t, got.err)
		assert.Equal(t, 500*time.Millisecond, got.at, "room all along, but nothing before the pause's end")
		assert.NoError(t, a.Pause(begin), "a pause in the past changes nothing")
		require.NoError(t, a.Close())
		assert.ErrorIs(t, a.Pause(begin.Add(time.Hour)), permits.ErrClosed)
	})
}

func TestWindowMovesAReservationEarlierWhenAnotherProcessSettles(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 10, Per: time.Second}
		a, b := vwindow(t, c, "move", limit), vwindow(t, c, "move", limit)
		begin := time.Now()
		gb, err := b.TryAcquireGrant(1)
		require.NoError(t, err)
		g, err := a.TryAcquireGrant(9) // an estimate of 9
		require.NoError(t, err)
		waiter := start(begin, func() error { _, err := b.Acquire(context.Background(), 4); return err })
		synctest.Wait() // b's 4 reserved at 1s, when the 10 at 0 leave
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, a.Settle(g, 2)) // a used 2: room for b's 4 now
		_, err = b.TryAcquire(1)
		require.Error(t, err, "a TryAcquire never passes b's own waiter, and asks nothing")
		require.NoError(t, b.Settle(gb, 1)) // b's next call asks its reservation to move
		got := <-waiter
		require.NoError(t, got.err)
		assert.Equal(t, 100*time.Millisecond, got.at, "moved from 1s to the moment b asked again")
		assert.Equal(t, uint64(1), b.Stats().Moved)
	})
}

func TestWindowPauseSendsBackTheReservationsItCovers(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		w := vwindow(t, c, "paused-waiters", algorithms.Rate{Count: 4, Per: time.Second})
		begin := time.Now()
		_, err := w.TryAcquire(4)
		require.NoError(t, err)
		first := start(begin, func() error { _, err := w.Acquire(context.Background(), 2); return err })
		synctest.Wait()
		second := start(begin, func() error { _, err := w.Acquire(context.Background(), 2); return err })
		synctest.Wait() // both reserved at 1s
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, w.Pause(begin.Add(1500*time.Millisecond)))
		a, b := <-first, <-second
		require.NoError(t, a.err)
		require.NoError(t, b.err)
		assert.Equal(t, 1500*time.Millisecond, a.at, "not at its reservation, 1s, inside the pause")
		assert.Equal(t, 1500*time.Millisecond, b.at)
		assert.Equal(t, uint64(4), w.Stats().GivenBack, "both reservations went back")
		_, err = w.TryAcquire(1)
		assert.Error(t, err, "4 admitted at 1.5s fill the window")
	})
}

func TestWindowPauseReachesAnotherProcessReservationsWithItsNextCall(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		limit := algorithms.Rate{Count: 4, Per: time.Second}
		a, b := vwindow(t, c, "paused-elsewhere", limit), vwindow(t, c, "paused-elsewhere", limit)
		begin := time.Now()
		_, err := a.TryAcquire(4)
		require.NoError(t, err)
		first := start(begin, func() error { _, err := b.Acquire(context.Background(), 2); return err })
		synctest.Wait() // b's reservation at 1s
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, a.Pause(begin.Add(1500*time.Millisecond))) // a got a 429
		second := start(begin, func() error { _, err := b.Acquire(context.Background(), 1); return err })
		f, s := <-first, <-second
		require.NoError(t, f.err)
		require.NoError(t, s.err)
		assert.Equal(t, 1500*time.Millisecond, f.at, "b learned of the pause with its next call")
		assert.Equal(t, 1500*time.Millisecond, s.at)
	})
}
