package actor_test

import (
	"context"
	"errors"
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

// Issue 13: limits that listen to the API.

// acquireAll starts one AcquireGrant per cost, in order, and records each
// grant's instant since t0 (or its error) under its index.
func acquireAll(t *testing.T, wg *sync.WaitGroup, l *actor.Limiter, t0 time.Time, costs ...int64) (at []time.Duration, errs []error) {
	t.Helper()
	at, errs = make([]time.Duration, len(costs)), make([]error, len(costs))
	for i, c := range costs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := l.AcquireGrant(context.Background(), c)
			if errs[i] = err; err == nil {
				at[i] = g.At.Sub(t0)
			}
		}()
		synctest.Wait()
	}
	return at, errs
}

// SetRate re-times the queued waiters at once, in order; nothing granted is
// taken back (the half unit owed at 10/s is 5ms at 100/s).
func TestSetRateRetimesTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer l.Close()
		require.True(t, l.Allow()) // TAT t0+100ms
		var wg sync.WaitGroup
		at, errs := acquireAll(t, &wg, l, t0, 1, 1, 1, 1)
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, l.SetRate(algorithms.PerSecond(100)))
		wg.Wait()
		for i, want := range []time.Duration{55, 65, 75, 85} {
			require.NoError(t, errs[i])
			assert.Equal(t, want*time.Millisecond, at[i], "waiter %d", i)
		}
		// The lock-free path sees the new rate: the next unit 10ms after
		// the last grant, at +95ms.
		_, err := l.TryAcquire(1)
		var rl *permits.RateLimitError
		require.ErrorAs(t, err, &rl)
		assert.Equal(t, 10*time.Millisecond, rl.RetryAfter)
	})
}

// A smaller burst fails the waiters whose cost no longer fits, clearly; the
// others keep their places.
func TestSetBurstFailsWaitersThatNoLongerFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 5))
		defer l.Close()
		_, err := l.TryAcquire(5)
		require.NoError(t, err)
		var wg sync.WaitGroup
		at, errs := acquireAll(t, &wg, l, t0, 2, 4, 1)
		require.NoError(t, l.SetBurst(3))
		wg.Wait()
		assert.NoError(t, errs[0])
		assert.ErrorIs(t, errs[1], permits.ErrCostExceedsCapacity, "4 > the new burst of 3")
		assert.NoError(t, errs[2])
		assert.Less(t, at[0], at[2])
		_, err = l.Acquire(context.Background(), 4)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
		assert.ErrorIs(t, l.SetBurst(0), permits.ErrInvalidConfig)
	})
}

func TestSetRateErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(noCloner{gcra(t, algorithms.PerSecond(10), 1)})
		assert.ErrorIs(t, l.SetRate(algorithms.PerSecond(5)), actor.ErrNotTunable)
		require.NoError(t, l.Close())

		w, err := algorithms.NewSlidingWindow(algorithms.PerSecond(10))
		require.NoError(t, err)
		l = actor.MustNew(w)
		assert.ErrorIs(t, l.SetBurst(5), actor.ErrNotTunable, "a window has no burst")
		assert.NoError(t, l.SetRate(algorithms.PerSecond(20)))
		assert.ErrorIs(t, l.SetRate(algorithms.Rate{}), permits.ErrInvalidConfig)
		require.NoError(t, l.Close())
		assert.ErrorIs(t, l.SetRate(algorithms.PerSecond(5)), permits.ErrClosed)
		assert.ErrorIs(t, l.Pause(time.Now().Add(time.Second)), permits.ErrClosed)
	})
}

// Pause: no grant before until; waiters keep their order; a later pause
// extends, an earlier one does not shorten; TryAcquire's RetryAfter includes
// it, and the lock-free paths are shut meanwhile.
func TestPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer l.Close()
		require.True(t, l.Allow())
		var wg sync.WaitGroup
		at, errs := acquireAll(t, &wg, l, t0, 1, 1, 1)
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, l.Pause(t0.Add(time.Second)))
		require.NoError(t, l.Pause(t0.Add(500*time.Millisecond)), "earlier: does not shorten")
		_, err := l.TryAcquire(1)
		var rl *permits.RateLimitError
		require.ErrorAs(t, err, &rl)
		assert.GreaterOrEqual(t, rl.RetryAfter, 950*time.Millisecond, "RetryAfter includes the pause")
		require.NoError(t, l.Pause(t0.Add(1200*time.Millisecond)), "later: extends")
		wg.Wait()
		for i, want := range []time.Duration{1200, 1300, 1400} {
			require.NoError(t, errs[i])
			assert.Equal(t, want*time.Millisecond, at[i], "waiter %d", i)
		}

		// With nobody waiting, a pause shuts the lock-free paths too.
		time.Sleep(time.Second)
		require.NoError(t, l.Pause(time.Now().Add(300*time.Millisecond)))
		assert.False(t, l.Allow(), "paused")
		start := time.Now()
		_, err = l.Acquire(context.Background(), 1)
		require.NoError(t, err)
		assert.Equal(t, 300*time.Millisecond, time.Since(start), "granted when the pause ends")
		time.Sleep(time.Second)
		assert.True(t, l.Allow(), "the lock-free path is back after the pause")
	})
}

// Settle: more than granted is a debt later grants wait for; less gives the
// difference back; once; only on its own limiter.
func TestSettleOnTheLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 10))
		defer l.Close()
		other := actor.MustNew(gcra(t, algorithms.PerSecond(10), 10))
		defer other.Close()
		g, err := l.AcquireGrant(context.Background(), 5)
		require.NoError(t, err)
		require.NoError(t, l.Settle(g, 15)) // 10 units of debt beyond the 5
		assert.ErrorIs(t, l.Settle(g, 15), permits.ErrUnknownGrant, "settled twice")
		assert.False(t, l.Refund(g), "a settled grant refunds nothing")
		// TAT is at +1.5s with a burst of 1s: one unit passes at +0.6s.
		start := time.Now()
		require.NoError(t, l.Wait(context.Background()))
		assert.Equal(t, 600*time.Millisecond, time.Since(start))

		g2, err := other.AcquireGrant(context.Background(), 8)
		require.NoError(t, err)
		assert.ErrorIs(t, l.Settle(g2, 1), permits.ErrUnknownGrant, "a grant of another limiter")
		require.NoError(t, other.Settle(g2, 1)) // 7 back
		_, err = other.TryAcquire(9)
		assert.NoError(t, err, "8 settled at 1 gives 7 back")
		assert.ErrorIs(t, other.Settle(permits.Grant{}, 1), permits.ErrUnknownGrant)
		assert.ErrorIs(t, other.Settle(g2, -1), permits.ErrInvalidCost)
	})
}

// Each part of All settles its own share: the request slot stays one, the
// tokens are settled at what the call used.
func TestSettleThroughAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		requests := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer requests.Close()
		tokens := actor.MustNew(gcra(t, algorithms.PerSecond(1000), 1000))
		defer tokens.Close()
		pool, err := actor.NewPool(2)
		require.NoError(t, err)
		defer pool.Close()
		lim := permits.All(permits.FixedCost(requests, 1), tokens, permits.FixedCost(pool, 1))
		p, err := lim.Acquire(context.Background(), 600)
		require.NoError(t, err)
		require.NoError(t, permits.Settle(p, 100), "500 tokens back")
		assert.ErrorIs(t, permits.Settle(p, 100), permits.ErrUnknownGrant, "once")
		p.Release()
		assert.ErrorIs(t, permits.Settle(p, 100), permits.ErrUnknownGrant, "released")
		_, err = tokens.TryAcquire(900)
		assert.NoError(t, err, "the 500 settled away are back")
		_, err = requests.TryAcquire(1)
		assert.Error(t, err, "the request slot was used whatever the tokens")
		pm, err := tokens.Acquire(context.Background(), 1)
		require.NoError(t, err)
		assert.ErrorIs(t, permits.Settle(pm, 1), permits.ErrUnknownGrant, "a permit that keeps no record")
	})
}

// A wait bound per call: Do refuses at once a wait longer than the bound,
// without calling fn, and the call itself keeps its full context.
func TestDoWithMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer l.Close()
		require.True(t, l.Allow())
		var wg sync.WaitGroup
		_, _ = acquireAll(t, &wg, l, time.Now(), 1, 1) // the next free unit is at +300ms
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		called := false
		err := permits.Do(ctx, l, 1, func(context.Context) error { called = true; return nil }, permits.WithMaxWait(100*time.Millisecond))
		var rl *permits.RateLimitError
		require.ErrorAs(t, err, &rl)
		assert.False(t, errors.Is(err, context.DeadlineExceeded), "the caller's context did not end")
		assert.False(t, called)
		assert.Equal(t, 300*time.Millisecond, rl.RetryAfter)
		wg.Wait()

		var callDeadline time.Time
		err = permits.Do(ctx, l, 1, func(ctx context.Context) error {
			callDeadline, _ = ctx.Deadline()
			return nil
		}, permits.WithMaxWait(200*time.Millisecond))
		require.NoError(t, err)
		want, _ := ctx.Deadline()
		assert.Equal(t, want, callDeadline, "the call keeps the whole context")

		// The same as a decorator, inside All.
		lim := permits.All(permits.MaxWait(l, 50*time.Millisecond))
		_, err = lim.Acquire(ctx, 1)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
	})
}

// TestMaxWaitZeroTakesAFreePermit: a bound of zero means "free at once",
// and a free permit is granted; it used to build a context that was done
// before the limiter looked, so nothing was ever granted.
func TestMaxWaitZeroTakesAFreePermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 2))
		defer l.Close()
		_, err := permits.MaxWait(l, 0).Acquire(context.Background(), 1)
		assert.NoError(t, err, "MaxWait(l, 0) with a free unit")
		err = permits.Do(context.Background(), l, 1, func(context.Context) error { return nil }, permits.WithMaxWait(0))
		assert.NoError(t, err, "Do with WithMaxWait(0) and a free unit")
		_, err = permits.MaxWait(l, 0).Acquire(context.Background(), 1)
		d, ok := permits.RetryAfter(err)
		assert.True(t, ok, "nothing free: a refusal with RetryAfter, got %v", err)
		assert.Equal(t, 100*time.Millisecond, d)
		g, err := permits.MaxWait(l, 0).(permits.Refunder).AcquireGrant(context.Background(), 1)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Zero(t, g)
	})
}

// TestMaxWaitKeepsTheCallersEarlierDeadline: when the caller's own deadline
// comes before the bound, a refusal still says it was the deadline
// (context.DeadlineExceeded), as the limiter alone says it.
func TestMaxWaitKeepsTheCallersEarlierDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(1), 1))
		defer l.Close()
		require.True(t, l.Allow())
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := permits.MaxWait(l, 10*time.Second).Acquire(ctx, 1)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		assert.ErrorIs(t, err, context.DeadlineExceeded, "the caller's deadline, not the bound, refused it")
		d, _ := permits.RetryAfter(err)
		assert.Equal(t, time.Second, d)
	})
}

// TestTryAcquireAtTheEndOfAPause: at the very instant a pause ends, a
// TryAcquire may run before the owner has woken to reopen the fast path; it
// used to be refused with "retry after 1ns" from the state the owner had
// published. An out-of-date word now sends it to the owner.
func TestTryAcquireAtTheEndOfAPause(t *testing.T) {
	for range 20 { // either goroutine may run first at that instant
		synctest.Test(t, func(t *testing.T) {
			l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 5))
			defer l.Close()
			require.NoError(t, l.Pause(time.Now().Add(time.Second)))
			_, err := l.TryAcquire(1)
			require.ErrorIs(t, err, permits.ErrRateLimited, "paused")
			time.Sleep(time.Second)
			_, err = l.TryAcquire(1)
			assert.NoError(t, err, "the pause is over")
		})
	}
}

// TestQuotaBesideSetRateOnAWindow: TryAcquireQuota reads the limit and the
// window from what the owner publishes, not from the algorithm, which a
// sliding window's SetRate changes in place on the owner (-race caught it).
func TestQuotaBesideSetRateOnAWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, err := algorithms.NewSlidingWindow(algorithms.PerSecond(2))
		require.NoError(t, err)
		l := actor.MustNew(w)
		defer l.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		require.True(t, l.Allow())
		require.True(t, l.Allow())
		go func() { _, _ = l.Acquire(ctx, 1) }() // a waiter: TryAcquireQuota answers from the published word
		synctest.Wait()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 50 {
				assert.NoError(t, l.SetRate(algorithms.Rate{Count: int64(2 + i%2), Per: time.Second}))
			}
		}()
		for range 50 {
			_, q, err := l.TryAcquireQuota(1)
			assert.ErrorIs(t, err, permits.ErrRateLimited)
			assert.Contains(t, []int64{2, 3}, q.Limit)
			assert.Equal(t, time.Second, q.Window)
		}
		<-done
		cancel()
	})
}
