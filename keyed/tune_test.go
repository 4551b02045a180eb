package keyed_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// Issue 13: SetRate and SetBurst per key.

// SetRate re-times the key's queued waiters at once, in order, from the
// change's instant, and nothing granted is taken back (the half unit owed
// at 10/s is 5ms at 100/s): the timeline of actor's
// TestSetRateRetimesTheQueue. Another key of the same shard, waiting too,
// keeps its rate and its schedule.
func TestSetRateRetimesThatKeysWaitersAndNoOtherKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 1), keyed.WithShards(1))
		for _, k := range []string{"a", "b"} {
			_, err := l.TryAcquire(k, 1) // TAT t0+100ms
			require.NoError(t, err)
			require.True(t, keyed.IsCell(l, k))
		}
		g := newGrants()
		var wg sync.WaitGroup
		queue(&wg, l, "a", g, seq(0, 4), nil, 1, 1, 1, 1)
		queue(&wg, l, "b", g, seq(10, 4), nil, 1, 1, 1, 1)
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, l.SetRate("a", algorithms.PerSecond(100)))
		wg.Wait()
		for i, want := range []time.Duration{55, 65, 75, 85} {
			require.NoError(t, g.errs[i])
			assert.Equal(t, want*time.Millisecond, g.at[i].Sub(t0), "a's waiter %d", i)
		}
		for i, want := range []time.Duration{100, 200, 300, 400} {
			require.NoError(t, g.errs[10+i])
			assert.Equal(t, want*time.Millisecond, g.at[10+i].Sub(t0), "b's waiter %d", i)
		}
		assert.Equal(t, []int{0, 1, 2, 3, 10, 11, 12, 13}, g.granted(), "each key in order")
		assert.False(t, keyed.IsCell(l, "a"), "a has a configuration of its own")
		assert.True(t, keyed.IsCell(l, "b"))
	})
}

// With nobody waiting, the key's lock-free path decides at the new rate
// at once: a key that was a cell, and one that had its own algorithm.
func TestTheLockFreePathSeesTheNewRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, func(k string) (algorithms.Algorithm, error) {
			if k == "own" {
				return algorithms.NewGCRA(algorithms.PerSecond(20), 2) // not the shared configuration
			}
			return algorithms.NewGCRA(algorithms.PerSecond(10), 2)
		}, keyed.WithIdleTimeout(time.Hour))
		for _, k := range []string{"cell", "own"} {
			_, err := l.TryAcquire(k, 2)
			require.NoError(t, err)
			_, err = l.TryAcquire(k, 1)
			wait, _ := permits.RetryAfter(err)
			require.Greater(t, wait, 40*time.Millisecond, "%s: at the old rate", k)
		}
		require.True(t, keyed.IsCell(l, "cell"))
		require.False(t, keyed.IsCell(l, "own"))
		for _, k := range []string{"cell", "own"} {
			require.NoError(t, l.SetRate(k, algorithms.PerSecond(1000)))
			assert.True(t, keyed.FastPath(l, k), "%s: decided on the caller's goroutine", k)
		}
		time.Sleep(2 * time.Millisecond)
		for _, k := range []string{"cell", "own"} {
			_, err := l.TryAcquire(k, 2)
			require.NoError(t, err, "%s: 2 units owed at the old rate are 2ms at the new one", k)
			_, err = l.TryAcquire(k, 1)
			wait, ok := permits.RetryAfter(err)
			require.True(t, ok, "%s: %v", k, err)
			assert.Equal(t, time.Millisecond, wait, "%s: RetryAfter at the new rate", k)
		}
	})
}

// A smaller burst fails the key's waiters whose cost no longer fits,
// clearly; the others keep their places. A request that checked its cost
// against the old burst and reaches the owner just after the change fails
// the same way, instead of queuing for a grant that never comes.
func TestSetBurstFailsWaitersThatNoLongerFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 5), keyed.WithIdleTimeout(time.Hour))
		_, err := l.TryAcquire("k", 5)
		require.NoError(t, err)
		g := newGrants()
		var wg sync.WaitGroup
		queue(&wg, l, "k", g, seq(0, 3), nil, 2, 4, 1)
		e := keyed.Pinned(l, "k") // a caller that checked 4 against the burst of 5
		require.NoError(t, l.SetBurst("k", 3))
		assert.ErrorIs(t, keyed.AcquirePinned(l, e, 4), permits.ErrCostExceedsCapacity)
		wg.Wait()
		assert.NoError(t, g.errs[0])
		assert.ErrorIs(t, g.errs[1], permits.ErrCostExceedsCapacity, "4 > the new burst of 3")
		assert.NoError(t, g.errs[2])
		assert.Equal(t, []int{0, 2}, g.granted())
		_, err = l.Acquire(context.Background(), "k", 4)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
		_, q, err := l.TryAcquireQuota("k", 1)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Equal(t, int64(3), q.Limit)
		assert.Equal(t, keyed.Stats{Stats: permits.Stats{Granted: 3, Rejected: 1}, Keys: 1}, l.Stats())
	})
}

// SetRate on a key that is not live makes it with the constructor and
// changes it, so the setting is not lost: a changed key is kept, full and
// unused, for its window at the new rate (1s here), and then as long as
// it is in use, as any key. Once it is full and unused, it is dropped, and
// the constructor's rate applies again.
func TestSetRateOnAKeyNotLiveHoldsUntilItIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 2))
		require.NoError(t, l.SetRate("k", algorithms.PerSecond(2))) // 2 units refill in 1s
		assert.Equal(t, 1, l.Stats().Keys)
		time.Sleep(990 * time.Millisecond)
		assert.Equal(t, 1, l.Stats().Keys, "full and unused, but kept for its window")
		_, err := l.TryAcquire("k", 2)
		require.NoError(t, err)
		for range 3 {
			_, err = l.TryAcquire("k", 1)
			wait, _ := permits.RetryAfter(err)
			assert.Equal(t, 500*time.Millisecond, wait, "the new rate")
			time.Sleep(wait)
			_, err = l.TryAcquire("k", 1)
			require.NoError(t, err)
		}
		time.Sleep(2 * time.Second) // full again, unused, and dropped
		assert.Equal(t, 0, l.Stats().Keys)
		_, err = l.TryAcquire("k", 2)
		require.NoError(t, err)
		assert.True(t, keyed.IsCell(l, "k"), "made anew by the constructor")
		_, err = l.TryAcquire("k", 1)
		wait, _ := permits.RetryAfter(err)
		assert.Equal(t, 100*time.Millisecond, wait, "the constructor's rate")
	})
}

// A rate without a one-word form takes the key off the lock-free path; a
// rate with one brings it back, gate open. Decisions stay exact on both.
func TestSetRateIntoTheWideFormAndBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 1), keyed.WithIdleTimeout(time.Hour))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		wide := algorithms.Rate{Count: 1<<31 + 1, Per: time.Second} // more than 2^30 units per period
		require.NoError(t, l.SetRate("k", wide))
		assert.False(t, keyed.FastPath(l, "k"), "no lock-free form")
		time.Sleep(time.Millisecond)
		_, err = l.TryAcquire("k", 1)
		require.NoError(t, err, "decided by the owner")
		require.NoError(t, l.SetRate("k", algorithms.PerSecond(100)))
		assert.True(t, keyed.FastPath(l, "k"), "lock-free again, with nobody waiting")
		time.Sleep(10 * time.Millisecond)
		_, err = l.TryAcquire("k", 1)
		require.NoError(t, err)
		_, err = l.TryAcquire("k", 1)
		wait, _ := permits.RetryAfter(err)
		assert.Equal(t, 10*time.Millisecond, wait)
	})
}

// notTunable hides every face of an algorithm but Algorithm.
type notTunable struct{ algorithms.Algorithm }

func TestSetRateErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, func(k string) (algorithms.Algorithm, error) {
			switch k {
			case "window":
				return algorithms.NewSlidingWindow(algorithms.PerSecond(10))
			case "fixed":
				return algorithms.NewFixedWindow(algorithms.PerSecond(10))
			case "plain":
				g, err := algorithms.NewGCRA(algorithms.PerSecond(10), 1)
				return notTunable{g}, err
			case "broken":
				return nil, errors.New("no such tenant")
			}
			return algorithms.NewGCRA(algorithms.PerSecond(10), 2)
		})
		assert.ErrorIs(t, l.SetRate("plain", algorithms.PerSecond(5)), keyed.ErrNotTunable)
		assert.ErrorIs(t, l.SetRate("plain", algorithms.PerSecond(5)), actor.ErrNotTunable, "one sentinel for both")
		assert.ErrorIs(t, l.SetBurst("window", 5), keyed.ErrNotTunable, "a window has no burst")
		assert.ErrorIs(t, l.SetBurst("fixed", 5), keyed.ErrNotTunable, "a window has no burst")
		assert.NoError(t, l.SetRate("window", algorithms.PerSecond(20)))
		assert.ErrorIs(t, l.SetRate("window", algorithms.Rate{}), permits.ErrInvalidConfig)

		// A bad setting changes nothing: a cell key stays a cell.
		_, err := l.TryAcquire("cell", 1)
		require.NoError(t, err)
		assert.ErrorIs(t, l.SetRate("cell", algorithms.Rate{Count: -1, Per: time.Second}), permits.ErrInvalidConfig)
		assert.ErrorIs(t, l.SetBurst("cell", 0), permits.ErrInvalidConfig)
		assert.ErrorIs(t, l.SetBurst("cell", -3), permits.ErrInvalidConfig)
		assert.True(t, keyed.IsCell(l, "cell"))
		_, err = l.TryAcquire("cell", 1)
		require.NoError(t, err, "the burst of 2 is still there")

		var algErr *keyed.AlgorithmError
		require.ErrorAs(t, l.SetRate("broken", algorithms.PerSecond(5)), &algErr)
		assert.EqualError(t, algErr.Err, "no such tenant")
		one := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 1), keyed.WithMaxKeys(1))
		assert.NoError(t, one.SetRate("a", algorithms.PerSecond(5)), "makes a, which it keeps")
		assert.ErrorIs(t, one.SetRate("b", algorithms.PerSecond(5)), keyed.ErrTooManyKeys)

		require.NoError(t, l.Close())
		assert.ErrorIs(t, l.SetRate("cell", algorithms.PerSecond(5)), permits.ErrClosed)
		assert.ErrorIs(t, l.SetBurst("cell", 5), permits.ErrClosed)
	})
}

// The refusals of the lock-free and owner paths are the lean
// permits.RetryLater, which errors.As still turns into a
// *permits.RateLimitError; a refusal by a deadline keeps its Cause.
func TestRefusalsAreRetryLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 1))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		_, err = l.TryAcquire("k", 1) // the lock-free path
		assert.Equal(t, permits.RetryLater(100*time.Millisecond), err)
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = l.Acquire(context.Background(), "k", 1) })
		synctest.Wait()
		_, err = l.TryAcquire("k", 1) // behind a waiter: what the owner published
		assert.Equal(t, permits.RetryLater(100*time.Millisecond), err)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err = l.Acquire(ctx, "k", 1) // the owner refuses: the deadline comes first
		var rl *permits.RateLimitError
		require.ErrorAs(t, err, &rl)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		wg.Wait()

		lq := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 1), keyed.WithMaxQueue(1))
		_, err = lq.TryAcquire("k", 1)
		require.NoError(t, err)
		wg.Go(func() { _, _ = lq.Acquire(context.Background(), "k", 1) })
		synctest.Wait()
		_, err = lq.Acquire(context.Background(), "k", 1) // the owner refuses: the queue is full
		assert.Equal(t, permits.RetryLater(200*time.Millisecond), err)
		wg.Wait()
	})
}

// SetRate on a cell key first gives the key an entry, moving its cell out
// of the slot (a caller that found the slot without a lock then finds it
// retired and looks again), and then detaches the entry's cell into a
// GCRA, under the write lock, which every decision on an entry's cell
// holds the lock against. From the detach on, the cell decides nothing
// (its admissions before are in the key's new GCRA: algorithms'
// TestDetachIsOneStepWithTheFastPath), and the key keeps the units the
// cell had left.
func TestACallerOnADetachedCellLooksAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lim atomic.Pointer[keyed.Limiter[string]]
		hooked := make(chan bool, 1)
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 3), keyed.WithDetachedHook(func(e any) {
			_, open := keyed.DecideOnCell(lim.Load(), e, 1)
			hooked <- open
		}))
		lim.Store(l)
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		stale := keyed.Slot(l, "k")
		require.NoError(t, l.SetRate("k", algorithms.PerSecond(10)))
		assert.False(t, <-hooked, "the detached cell decides nothing")
		_, open := keyed.DecideOnSlot(l, stale, 1)
		assert.False(t, open, "nor the slot the cell left")
		assert.False(t, keyed.IsCell(l, "k"), "an algorithm of its own")
		e := keyed.Entry(l, "k")
		require.False(t, keyed.Pin(l, e), "a pin under the lock finds the key whole")
		require.NoError(t, keyed.SendPinned(l, e, 1), "the first of the two units the cell had left")
		_, err = l.TryAcquire("k", 1)
		require.NoError(t, err, "the second")
		_, err = l.TryAcquire("k", 1)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
	})
}

// A SetRate that fails on a cell key gives the entry it made back as it
// answers, not at the owner's next pass: the owner settles the key after
// the reply has taken its pin back.
func TestAFailedSetRateGivesTheCellKeysEntryBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 2), keyed.WithShards(1))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		synctest.Wait() // the owner's pass for the new key: the next is 10ms away
		require.ErrorIs(t, l.SetRate("k", algorithms.Rate{Count: -1, Per: time.Second}), permits.ErrInvalidConfig)
		synctest.Wait()
		assert.True(t, keyed.IsCell(l, "k"))
		assert.False(t, keyed.HasEntry(l, "k"), "the entry went back with the answer")
		assert.True(t, keyed.FastPath(l, "k"))
	})
}
