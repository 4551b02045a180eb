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

// A TryAcquire refused behind a queue says how long a newcomer would wait
// behind its tail, not behind its head: a client that sleeps for the
// RetryAfter it was given is not refused again and again. With 49 waiting
// at a 10 ms interval, that is 490 ms; before, it was the head's 10 ms
// (the plain Acquires behind the head sat in the inbox, which does not
// wake an owner asleep on its timer, and the owner had predicted none of
// them). Checked with the waiters queued at once and with waiters coming
// one by one, and after a cancellation made the owner's prediction stale.
func TestTryAcquireBehindAQueueSaysTheTailsWait(t *testing.T) {
	for _, spread := range []time.Duration{0, time.Millisecond} {
		t.Run(spread.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := actor.MustNew(gcra(t, algorithms.PerSecond(100), 1))
				defer l.Close()
				require.True(t, l.Allow()) // the next unit is 10 ms away
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var wg sync.WaitGroup
				for i := range 49 {
					c := context.Background()
					if i == 20 {
						c = ctx // one in the middle gives up below
					}
					wg.Go(func() {
						if _, err := l.Acquire(c, 1); err != nil && !errors.Is(err, context.Canceled) {
							t.Errorf("waiter %d: %v", i, err)
						}
					})
					time.Sleep(spread)
					synctest.Wait()
				}
				el := time.Duration(49) * spread
				tail := 490*time.Millisecond - el // the 49th is granted at 490 ms
				_, err := l.TryAcquire(1)
				wait, ok := permits.RetryAfter(err)
				require.True(t, ok, "%v", err)
				assert.GreaterOrEqual(t, wait, tail, "spread %v: behind the tail, less nothing", spread)
				assert.LessOrEqual(t, wait, tail+10*time.Millisecond, "spread %v: within one interval of it", spread)

				cancel() // one fewer: the tail moves 10 ms closer
				synctest.Wait()
				_, err = l.TryAcquire(1)
				wait, _ = permits.RetryAfter(err)
				assert.GreaterOrEqual(t, wait, tail-10*time.Millisecond, "after a cancellation")
				assert.LessOrEqual(t, wait, tail, "after a cancellation")
				wg.Wait()
			})
		})
	}
}

// The Acquires a sleeping owner has not taken yet count too, without
// asking it: 49 plain Acquires behind one another at a 10 ms interval do
// not wake an owner asleep on its timer, and 48 of them sit in its inbox.
// A TryAcquire answers the tail's wait (490 ms, within one interval) from
// what the owner published and what the inbox holds, and the owner sleeps
// on. Before, it woke the owner to ask. An algorithm that gives units
// back in steps (a fixed window) cannot be counted that way: the owner is
// asked, and answers as honestly.
func TestTryAcquireCountsTheAcquiresTheOwnerHasNotTaken(t *testing.T) {
	for name, alg := range map[string]func(t *testing.T) algorithms.Algorithm{
		"gcra": func(t *testing.T) algorithms.Algorithm { return gcra(t, algorithms.PerSecond(100), 1) },
		"fixed window": func(t *testing.T) algorithms.Algorithm {
			w, err := algorithms.NewFixedWindow(algorithms.Rate{Count: 1, Per: 10 * time.Millisecond})
			require.NoError(t, err)
			return w
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := actor.MustNew(alg(t))
				defer l.Close()
				require.True(t, l.Allow()) // the next unit is 10 ms away
				var wg sync.WaitGroup
				for range 49 {
					wg.Go(func() { _, _ = l.Acquire(context.Background(), 1) })
					synctest.Wait()
				}
				woken := actor.Wakes(l)
				_, err := l.TryAcquire(1)
				wait, ok := permits.RetryAfter(err)
				require.True(t, ok, "%v", err)
				assert.GreaterOrEqual(t, wait, 480*time.Millisecond, "behind the tail, less one interval")
				assert.LessOrEqual(t, wait, 500*time.Millisecond, "within one interval of it")
				if name == "gcra" {
					assert.Equal(t, woken, actor.Wakes(l), "answered without waking the owner")
				}
				wg.Wait()
			})
		})
	}
}

// With lanes, a TryAcquire passes no waiter of any lane, so its RetryAfter
// is when the whole queue could be empty: ten waiting in two lanes at a
// 100 ms interval are granted by 1 s, and the refusal says 1 s, within one
// interval. Before, it said 100 ms, the head's wait, and a client that
// slept that long was refused nine more times.
func TestTryAcquireBehindLanesSaysWhenTheyDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer l.Close()
		a, err := l.Lane("a", 1)
		require.NoError(t, err)
		b, err := l.Lane("b", 3)
		require.NoError(t, err)
		require.True(t, l.Allow())
		var wg sync.WaitGroup
		for i := range 10 {
			ln := a
			if i%2 == 1 {
				ln = b
			}
			wg.Go(func() { _, _ = ln.Acquire(context.Background(), 1) })
			synctest.Wait()
		}
		for _, try := range []func(int64) (permits.Permit, error){a.TryAcquire, b.TryAcquire, l.TryAcquire} {
			_, err := try(1)
			wait, ok := permits.RetryAfter(err)
			require.True(t, ok, "%v", err)
			assert.GreaterOrEqual(t, wait, 900*time.Millisecond, "behind every lane's waiters, less one interval")
			assert.LessOrEqual(t, wait, 1100*time.Millisecond, "within one interval of the drain")
		}
		t0 := time.Now()
		wg.Wait()
		assert.Equal(t, time.Second, time.Since(t0), "drained at 1s")
	})
}
