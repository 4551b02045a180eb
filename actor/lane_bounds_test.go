package actor_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
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

// Issue 14: what lanes do to the bounds. A newcomer in another lane may go
// first, so the owner's predictions are lower bounds: a deadline that even
// the bound misses fails at once, one that later arrivals push the grant
// past fails then; WithMaxWait holds either way.

// laneAcquire starts ln.AcquireGrant(ctx, cost) and reports its outcome.
type laneOutcome struct {
	at  time.Duration // the grant's instant, or when the call returned
	err error
}

func laneAcquire(ctx context.Context, wg *sync.WaitGroup, t0 time.Time, ln *actor.Lane, cost int64) *laneOutcome {
	o := &laneOutcome{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		g, err := ln.AcquireGrant(ctx, cost)
		o.at, o.err = time.Since(t0), err
		if err == nil {
			o.at = g.At.Sub(t0)
		}
	}()
	synctest.Wait()
	return o
}

// lanesAt100 is the setting of most tests here: a GCRA of 100/s with a
// burst of 1, the burst spent (the next unit at +10ms), and lanes of weight
// 1 by the names given. The limiter is closed when the test ends.
func lanesAt100(t *testing.T, names []string, opts ...actor.Option) (t0 time.Time, l *actor.Limiter, lanes []*actor.Lane) {
	t0 = time.Now()
	l = actor.MustNew(gcra(t, algorithms.PerSecond(100), 1), opts...)
	t.Cleanup(func() { l.Close() })
	for _, name := range names {
		ln, err := l.Lane(name, 1)
		require.NoError(t, err)
		lanes = append(lanes, ln)
	}
	require.True(t, l.Allow())
	return t0, l, lanes
}

func TestLaneDeadlineBeforeTheBoundFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0, _, lanes := lanesAt100(t, []string{"batch", "interactive"})
		batch, interactive := lanes[0], lanes[1]
		var wg sync.WaitGroup
		ctx, cancel := context.WithCancel(context.Background())
		for range 100 {
			laneAcquire(ctx, &wg, t0, batch, 1)
		}
		// A batch newcomer is behind its lane's 100: a deadline in 500ms
		// cannot be met, and it is told at once.
		dl, cancelDL := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancelDL()
		_, err := batch.Acquire(dl, 1)
		var rl *permits.RateLimitError
		require.ErrorAs(t, err, &rl)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Duration(0), time.Since(t0), "at once")
		assert.Equal(t, 1010*time.Millisecond, rl.RetryAfter, "its lane's bound: 101 units after the burst")
		// An interactive newcomer is not behind the batch: the same
		// deadline is met.
		g, err := interactive.AcquireGrant(dl, 1)
		require.NoError(t, err)
		assert.Equal(t, 20*time.Millisecond, g.At.Sub(t0), "after the batch head")
		cancel()
		wg.Wait()
	})
}

// pushedPast queues x, a batch waiter whose bound (+10ms) meets its bound
// of 25ms, then, at +1ms, one waiter in each of n lanes of weight 2, whose
// finishes come before x's: they are granted at +10ms, +20ms, ..., and x's
// grant moves past its bound.
func pushedPast(t *testing.T, ctx context.Context, n int, opts ...actor.Option) (l *actor.Limiter, x *laneOutcome, others []*laneOutcome) {
	t0, l, lanes := lanesAt100(t, []string{"batch"}, opts...)
	var wg sync.WaitGroup
	x = laneAcquire(ctx, &wg, t0, lanes[0], 1)
	time.Sleep(time.Millisecond)
	for i := range n {
		ln, err := l.Lane(fmt.Sprint("interactive-", i), 2)
		require.NoError(t, err)
		others = append(others, laneAcquire(context.Background(), &wg, t0, ln, 1))
	}
	wg.Wait()
	for i, o := range others {
		require.NoError(t, o.err)
		assert.Equal(t, time.Duration(i+1)*10*time.Millisecond, o.at)
	}
	return l, x, others
}

// A deadline the bound meets queues; newcomers in other lanes that go first
// push the grant past it, and the wait ends at the deadline with the
// context's error, never with a grant after it.
func TestLaneDeadlinePushedPastEndsTheWaitThen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dl, cancel := context.WithTimeout(context.Background(), 25*time.Millisecond)
		defer cancel()
		l, x, _ := pushedPast(t, dl, 3)
		assert.ErrorIs(t, x.err, context.DeadlineExceeded)
		var rl *permits.RateLimitError
		assert.False(t, errors.As(x.err, &rl), "not refused at once: the context ended it")
		assert.Equal(t, 25*time.Millisecond, x.at)
		assert.Equal(t, uint64(1), l.Stats().Canceled)
	})
}

// WithMaxWait holds with lanes: a waiter pushed past it by other lanes is
// refused by the owner when its wait runs out, not later.
func TestLaneMaxWaitIsKeptByTheOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, x, _ := pushedPast(t, context.Background(), 2, actor.WithMaxWait(25*time.Millisecond))
		var rl *permits.RateLimitError
		require.ErrorAs(t, x.err, &rl)
		assert.NotErrorIs(t, x.err, context.DeadlineExceeded)
		assert.Equal(t, 25*time.Millisecond, x.at, "refused when its wait ran out")
		assert.Greater(t, rl.RetryAfter, time.Duration(0))
		assert.Equal(t, uint64(1), l.Stats().Rejected)
	})
}

// A lane's bound beyond WithMaxWait is refused at once.
func TestLaneMaxWaitRefusesABoundBeyondIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0, _, lanes := lanesAt100(t, []string{"batch"}, actor.WithMaxWait(25*time.Millisecond))
		var wg sync.WaitGroup
		var outs []*laneOutcome
		for range 4 {
			outs = append(outs, laneAcquire(context.Background(), &wg, t0, lanes[0], 1))
		}
		wg.Wait()
		for i, o := range outs {
			if i < 2 {
				assert.NoError(t, o.err)
				assert.Equal(t, time.Duration(i+1)*10*time.Millisecond, o.at)
				continue
			}
			var rl *permits.RateLimitError
			require.ErrorAs(t, o.err, &rl, "waiter %d", i)
			assert.Equal(t, time.Duration(0), o.at, "at once")
			assert.Equal(t, 30*time.Millisecond, rl.RetryAfter, "its lane's bound")
		}
	})
}

// TryAcquire passes no waiter in any lane, and its RetryAfter is a lower
// bound on the queue being empty: exact with one busy lane (a FIFO), below
// it with two.
func TestLaneTryAcquireRetryAfterIsALowerBound(t *testing.T) {
	for _, busy := range []int{1, 2} {
		t.Run(fmt.Sprint(busy, " busy lanes"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				// WithMaxWait makes every waiter's bound known.
				l := actor.MustNew(gcra(t, algorithms.PerSecond(100), 1), actor.WithMaxWait(time.Hour))
				defer l.Close()
				var lanes []*actor.Lane
				for i := range busy {
					ln, err := l.Lane(fmt.Sprint("lane-", i), 1)
					require.NoError(t, err)
					lanes = append(lanes, ln)
				}
				idle, err := l.Lane("idle", 5)
				require.NoError(t, err)
				require.True(t, l.Allow())
				var wg sync.WaitGroup
				var outs []*laneOutcome
				for k := range 10 {
					outs = append(outs, laneAcquire(context.Background(), &wg, t0, lanes[k%busy], 1))
				}
				time.Sleep(5 * time.Millisecond)
				_, err = idle.TryAcquire(1)
				var rl *permits.RateLimitError
				require.ErrorAs(t, err, &rl)
				assert.False(t, idle.Allow())
				wg.Wait()
				var drain time.Duration
				for _, o := range outs {
					require.NoError(t, o.err)
					drain = max(drain, o.at)
				}
				assert.Equal(t, 100*time.Millisecond, drain)
				until := 5*time.Millisecond + rl.RetryAfter
				assert.LessOrEqual(t, until, drain, "never promises an empty queue before it is")
				if busy == 1 {
					assert.Equal(t, drain, until, "one busy lane is a FIFO: exact")
				}
			})
		})
	}
}

// Cancellation in a lane leaves no trace: the waiter returns ctx.Err(), and
// the grants go on at the same pace to the others.
func TestLaneCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0, l, lanes := lanesAt100(t, []string{"a", "b"})
		a, b := lanes[0], lanes[1]
		var wg sync.WaitGroup
		ctx, cancel := context.WithCancel(context.Background())
		a0 := laneAcquire(ctx, &wg, t0, a, 1)
		a1 := laneAcquire(context.Background(), &wg, t0, a, 1)
		b0 := laneAcquire(context.Background(), &wg, t0, b, 1)
		b1 := laneAcquire(context.Background(), &wg, t0, b, 1)
		time.Sleep(5 * time.Millisecond)
		cancel()
		wg.Wait()
		assert.ErrorIs(t, a0.err, context.Canceled)
		assert.Equal(t, 5*time.Millisecond, a0.at)
		// a's new head finishes where a0 would have (nothing was used), ties
		// with b0 and arrived first.
		assert.Equal(t, []time.Duration{10, 20, 30}, []time.Duration{a1.at / time.Millisecond, b0.at / time.Millisecond, b1.at / time.Millisecond})
		assert.Equal(t, actor.Stats{Granted: 4, Canceled: 1}, l.Stats())
	})
}

// SetRate, SetBurst, Pause and Close act on every lane's waiters as on the
// limiter's own.
func TestLaneTuningAndClose(t *testing.T) {
	t.Run("SetRate", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
			defer l.Close()
			a, _ := l.Lane("a", 1)
			b, _ := l.Lane("b", 1)
			require.True(t, l.Allow()) // the next unit at +100ms
			var wg sync.WaitGroup
			outs := []*laneOutcome{laneAcquire(context.Background(), &wg, t0, a, 1), laneAcquire(context.Background(), &wg, t0, b, 1),
				laneAcquire(context.Background(), &wg, t0, a, 1), laneAcquire(context.Background(), &wg, t0, b, 1)}
			time.Sleep(50 * time.Millisecond)
			require.NoError(t, l.SetRate(algorithms.PerSecond(100)))
			wg.Wait()
			for i, want := range []time.Duration{55, 65, 75, 85} {
				require.NoError(t, outs[i].err)
				assert.Equal(t, want*time.Millisecond, outs[i].at, "waiter %d", i)
			}
		})
	})
	t.Run("SetBurst", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 5))
			defer l.Close()
			a, _ := l.Lane("a", 1)
			b, _ := l.Lane("b", 1)
			_, err := l.TryAcquire(5)
			require.NoError(t, err)
			var wg sync.WaitGroup
			big := laneAcquire(context.Background(), &wg, t0, a, 4)
			small := laneAcquire(context.Background(), &wg, t0, b, 2)
			require.NoError(t, l.SetBurst(3))
			wg.Wait()
			assert.ErrorIs(t, big.err, permits.ErrCostExceedsCapacity)
			assert.NoError(t, small.err)
		})
	})
	t.Run("Pause", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			l := actor.MustNew(gcra(t, algorithms.PerSecond(100), 1))
			defer l.Close()
			a, _ := l.Lane("a", 1)
			b, _ := l.Lane("b", 3, actor.WithPriority(2))
			require.True(t, l.Allow())
			var wg sync.WaitGroup
			oa := laneAcquire(context.Background(), &wg, t0, a, 1)
			ob := laneAcquire(context.Background(), &wg, t0, b, 1)
			require.NoError(t, l.Pause(t0.Add(time.Second)))
			_, err := b.TryAcquire(1)
			assert.ErrorIs(t, err, permits.ErrRateLimited)
			wg.Wait()
			assert.Equal(t, time.Second, ob.at, "the higher priority first, from the pause's end")
			assert.Equal(t, time.Second+10*time.Millisecond, oa.at)
		})
	})
	t.Run("Close", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			l := actor.MustNew(gcra(t, algorithms.PerSecond(1), 1))
			a, _ := l.Lane("a", 1)
			require.True(t, l.Allow())
			var wg sync.WaitGroup
			oa := laneAcquire(context.Background(), &wg, t0, a, 1)
			op := make(chan error, 1)
			go func() { _, err := l.Acquire(context.Background(), 1); op <- err }()
			synctest.Wait()
			require.NoError(t, l.Close())
			wg.Wait()
			assert.ErrorIs(t, oa.err, permits.ErrClosed)
			assert.ErrorIs(t, <-op, permits.ErrClosed)
			_, err := a.Acquire(context.Background(), 1)
			assert.ErrorIs(t, err, permits.ErrClosed)
			_, err = a.TryAcquire(1)
			assert.ErrorIs(t, err, permits.ErrClosed)
			assert.False(t, a.Allow())
			_, err = l.Lane("b", 1)
			assert.ErrorIs(t, err, permits.ErrClosed)
			assert.ErrorIs(t, l.SetPriorityFloor(0.1), permits.ErrClosed)
		})
	})
}

// The first lane switches the owner from its FIFO to the fair order: the
// waiters already queued keep their order and their instants, in the
// limiter's own lane, and the new lane's waiters share with them.
func TestLaneSwitchKeepsTheQueue(t *testing.T) {
	for _, maxWait := range []time.Duration{-1, 450 * time.Millisecond} {
		t.Run(fmt.Sprint("max wait ", maxWait), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithMaxWait(maxWait))
				defer l.Close()
				require.True(t, l.Allow())
				var wg sync.WaitGroup
				var mu sync.Mutex
				at := map[string]time.Duration{}
				errs := map[string]error{}
				start := func(name string, acquire func() (permits.Grant, error)) {
					wg.Add(1)
					go func() {
						defer wg.Done()
						g, err := acquire()
						mu.Lock()
						at[name], errs[name] = g.At.Sub(t0), err
						mu.Unlock()
					}()
					synctest.Wait()
				}
				for i := range 4 {
					start(fmt.Sprint("p", i), func() (permits.Grant, error) { return l.AcquireGrant(context.Background(), 1) })
				}
				time.Sleep(150 * time.Millisecond)
				x, err := l.Lane("x", 1)
				require.NoError(t, err)
				start("x", func() (permits.Grant, error) { return x.AcquireGrant(context.Background(), 1) })
				wg.Wait()
				want := map[string]time.Duration{"p0": 100, "p1": 200, "x": 300, "p2": 400, "p3": 500}
				if maxWait > 0 {
					// p3 arrived at 0 and would wait 500ms: its wait runs
					// out at 450ms, now that x went before it.
					delete(want, "p3")
					assert.ErrorIs(t, errs["p3"], permits.ErrRateLimited)
				}
				for name, ms := range want {
					require.NoError(t, errs[name], name)
					assert.Equal(t, ms*time.Millisecond, at[name], name)
				}
			})
		})
	}
}

func TestLaneErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer l.Close()
		for _, c := range []struct {
			name             string
			weight, priority int
			says             string
		}{
			{"", 1, 0, "needs a name"},
			{strings.Repeat("x", actor.MaxLaneName+1), 1, 0, "at most 128"},
			{"bad\xff", 1, 0, "not valid UTF-8"},
			{"tab\there", 1, 0, "control character"},
			{"w0", 0, 0, "weight must be in [1, 1048576], got 0"},
			{"w-", -3, 0, "got -3"},
			{"wbig", actor.MaxLaneWeight + 1, 0, "got 1048577"},
			{"p-", 1, -1, "priority must be in [0, 7], got -1"},
			{"p8", 1, actor.MaxPriority + 1, "got 8"},
		} {
			_, err := l.Lane(c.name, c.weight, actor.WithPriority(c.priority))
			assert.ErrorIs(t, err, permits.ErrInvalidConfig, "%q", c.name)
			assert.ErrorContains(t, err, c.says)
		}
		a, err := l.Lane("a", 2, nil) // nil options are ignored
		require.NoError(t, err)
		again, err := l.Lane("a", 2)
		require.NoError(t, err)
		assert.Same(t, a, again, "the same name, weight and priority: the same lane")
		_, err = l.Lane("a", 3)
		assert.ErrorIs(t, err, actor.ErrLaneExists)
		assert.ErrorContains(t, err, `lane "a" has weight 2 and priority 0, asked for 3 and 0`)
		_, err = l.Lane("a", 2, actor.WithPriority(1))
		assert.ErrorIs(t, err, actor.ErrLaneExists)
		assert.Equal(t, "a", a.Name())
		assert.Equal(t, 2, a.Weight())
		assert.Same(t, l, a.Limiter())
		for _, bad := range []float64{-0.1, 0.51, math.NaN(), math.Inf(1)} {
			assert.ErrorIs(t, l.SetPriorityFloor(bad), permits.ErrInvalidConfig, "%v", bad)
		}
		_, err = a.Acquire(context.Background(), 0)
		assert.ErrorIs(t, err, permits.ErrInvalidCost)
		_, err = a.TryAcquire(2)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
	})
}

// Many goroutines asking for the same lanes at once get one handle per
// name, and the owner switches once.
func TestLaneLookupIsSafeForConcurrentUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(1000), 10))
		defer l.Close()
		var wg sync.WaitGroup
		got := make([][]*actor.Lane, 8)
		for g := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 50 {
					ln, err := l.Lane(fmt.Sprint("tenant-", i), 1+i%3)
					assert.NoError(t, err)
					got[g] = append(got[g], ln)
					_ = ln.Wait(context.Background())
				}
			}()
		}
		wg.Wait()
		for g := range got {
			for i := range got[g] {
				assert.Same(t, got[0][i], got[g][i])
			}
		}
		assert.Equal(t, uint64(400), l.Stats().Granted)
	})
}

// Lanes compose: permits.All over a lane and a pool refunds the lane's
// grant when the pool refuses.
func TestLaneInAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(tokenBucket(t, algorithms.PerSecond(1), 3))
		defer l.Close()
		ln, err := l.Lane("tenant", 1)
		require.NoError(t, err)
		pool, err := actor.NewPool(1)
		require.NoError(t, err)
		defer pool.Close()
		held, err := pool.TryAcquire(1)
		require.NoError(t, err)
		both := permits.All(ln, permits.FixedCost(pool, 1))
		_, err = both.TryAcquire(3)
		require.Error(t, err)
		held.Release()
		p, err := both.TryAcquire(3)
		require.NoError(t, err, "the lane's units came back when the pool refused")
		p.Release()
	})
}

// A lane's bounds follow what happens to its waiters and to the capacity:
// a cancellation in the lane, a faster rate, a refund each bring the bound
// of the next newcomer forward, so that a deadline the grant can meet is
// never refused.
func TestLaneBoundsFollowChanges(t *testing.T) {
	cases := map[string]func(t *testing.T, l *actor.Limiter, cancel context.CancelFunc, g permits.Grant){
		"a cancellation in the lane": func(t *testing.T, _ *actor.Limiter, cancel context.CancelFunc, _ permits.Grant) { cancel() },
		"a faster rate": func(t *testing.T, l *actor.Limiter, _ context.CancelFunc, _ permits.Grant) {
			require.NoError(t, l.SetRate(algorithms.PerSecond(200)))
		},
		"a refund": func(t *testing.T, l *actor.Limiter, _ context.CancelFunc, g permits.Grant) {
			require.True(t, l.Refund(g))
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				l := actor.MustNew(tokenBucket(t, algorithms.PerSecond(100), 2), actor.WithMaxWait(time.Hour))
				defer l.Close()
				a, err := l.Lane("a", 1)
				require.NoError(t, err)
				g, err := a.TryAcquireGrant(2)
				require.NoError(t, err)
				var wg sync.WaitGroup
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				laneAcquire(context.Background(), &wg, t0, a, 1) // bound 10ms
				laneAcquire(ctx, &wg, t0, a, 1)                  // 20ms
				laneAcquire(context.Background(), &wg, t0, a, 1) // 30ms
				change(t, l, cancel, g)
				synctest.Wait() // a cancellation reaches the owner
				// Without the change the newcomer's bound is 40ms.
				dl, cancelDL := context.WithTimeout(context.Background(), 35*time.Millisecond)
				defer cancelDL()
				_, err = a.Acquire(dl, 1)
				assert.NoError(t, err, "a deadline the grant meets is not refused")
				wg.Wait()
			})
		})
	}
}

// A TryAcquire that reaches the owner while waiters are queued (the owner
// was busy, so the lock-free refusal was not open) gets the same lower
// bound on the queue being empty.
func TestLaneTryAcquireThroughTheOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		alg := &slowGCRA{GCRA: gcra(t, algorithms.PerSecond(100), 1), at: t0.Add(10 * time.Millisecond), stall: 5 * time.Millisecond}
		l := actor.MustNew(alg, actor.WithMaxWait(time.Hour))
		defer l.Close()
		a, err := l.Lane("a", 1)
		require.NoError(t, err)
		b, err := l.Lane("b", 1)
		require.NoError(t, err)
		require.True(t, l.Allow())
		var wg sync.WaitGroup
		for range 5 {
			laneAcquire(context.Background(), &wg, t0, a, 1) // 10ms to 50ms
		}
		time.Sleep(12 * time.Millisecond) // the owner is stalled in the grant at 10ms
		_, err = b.TryAcquire(1)
		var rl *permits.RateLimitError
		require.ErrorAs(t, err, &rl)
		assert.Equal(t, 15*time.Millisecond, time.Since(t0), "answered once the owner is free")
		assert.Equal(t, 35*time.Millisecond, rl.RetryAfter, "the queue is empty at 50ms at the earliest")
		wg.Wait()
	})
}

// With lanes every arrival wakes the owner, even one without a deadline or
// a bound: a newcomer in a lane of a higher priority, whose cost fits now,
// is granted and answered at once, not when the timer for the head fires.
func TestLaneNewcomerIsAnsweredAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := actor.MustNew(tokenBucket(t, algorithms.PerSecond(1), 5))
		defer l.Close()
		batch, err := l.Lane("batch", 1)
		require.NoError(t, err)
		urgent, err := l.Lane("urgent", 1, actor.WithPriority(1))
		require.NoError(t, err)
		_, err = l.TryAcquire(5)
		require.NoError(t, err)
		var wg sync.WaitGroup
		head := laneAcquire(context.Background(), &wg, t0, batch, 5) // due at +5s
		time.Sleep(time.Second)                                      // a token is back
		_, err = urgent.Acquire(context.Background(), 1)
		require.NoError(t, err)
		assert.Equal(t, time.Second, time.Since(t0), "answered at its arrival")
		wg.Wait()
		assert.Equal(t, 6*time.Second, head.at, "the head waits one more token")
	})
}

// A lane that was busy, with its waiters predicted, holds nothing of that
// once it is idle: its shadow of the algorithm is given back.
func TestLaneIdleHoldsNoShadow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0, _, lanes := lanesAt100(t, []string{"a", "b"}, actor.WithMaxWait(time.Hour))
		a, b := lanes[0], lanes[1]
		var wg sync.WaitGroup
		for range 3 {
			laneAcquire(context.Background(), &wg, t0, a, 1)
			laneAcquire(context.Background(), &wg, t0, b, 1)
		}
		wg.Wait()
		assert.False(t, actor.LaneShadowed(a))
		assert.False(t, actor.LaneShadowed(b))
	})
}

// A floor set before any lane is only recorded: the limiter keeps its FIFO
// and its costs (arrivals behind a busy queue still do not wake the owner)
// until its first lane, which applies it.
func TestLaneFloorBeforeAnyLaneKeepsTheFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer l.Close()
		require.NoError(t, l.SetPriorityFloor(0.5))
		require.True(t, l.Allow())
		var wg sync.WaitGroup
		ctx := context.Background()
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = l.Acquire(ctx, 1) }()
		synctest.Wait()
		before := actor.Wakes(l)
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = l.Acquire(ctx, 1) }()
		synctest.Wait()
		assert.Equal(t, before, actor.Wakes(l), "a FIFO arrival behind the head does not wake the owner")
		wg.Wait()
		// Now the lanes, with the floor: half the grants each.
		hi, err := l.Lane("hi", 1, actor.WithPriority(1))
		require.NoError(t, err)
		lo, err := l.Lane("lo", 1)
		require.NoError(t, err)
		var outs []*laneOutcome
		for range 2 {
			outs = append(outs, laneAcquire(ctx, &wg, t0, hi, 1), laneAcquire(ctx, &wg, t0, lo, 1))
		}
		wg.Wait()
		var order []int64
		for _, o := range outs {
			order = append(order, int64(o.at/(100*time.Millisecond)))
		}
		assert.Equal(t, []int64{3, 4, 5, 6}, order, "hi and lo in turn, as a floor of a half says")
	})
}
