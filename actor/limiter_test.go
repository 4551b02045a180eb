package actor_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

func gcra(t *testing.T, r algorithms.Rate, burst int64) *algorithms.GCRA {
	t.Helper()
	g, err := algorithms.NewGCRA(r, burst)
	require.NoError(t, err)
	return g
}

func tokenBucket(t *testing.T, r algorithms.Rate, capacity int64) *algorithms.TokenBucket {
	t.Helper()
	b, err := algorithms.NewTokenBucket(r, capacity)
	require.NoError(t, err)
	return b
}

// grant records when and in which order Acquire calls returned.
type grants struct {
	mu    sync.Mutex
	order []int
	at    map[int]time.Time
	errs  map[int]error
}

func newGrants() *grants { return &grants{at: map[int]time.Time{}, errs: map[int]error{}} }

func (g *grants) record(id int, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.errs[id] = err
		return
	}
	g.order = append(g.order, id)
	g.at[id] = time.Now()
}

// granted returns the order of the grants so far.
func (g *grants) granted() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.order)
}

// queue starts one Acquire per cost, in order: each has arrived at the owner
// before the next starts (synctest.Wait), so arrival order is the slice's.
func queue(t *testing.T, wg *sync.WaitGroup, l *actor.Limiter, g *grants, ctxs []context.Context, costs ...int64) {
	t.Helper()
	for i, c := range costs {
		ctx := context.Background()
		if ctxs != nil && ctxs[i] != nil {
			ctx = ctxs[i]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Acquire(ctx, c)
			g.record(i, err)
		}()
		synctest.Wait()
	}
}

func TestFIFOEvenWhenALaterWaiterAsksForLess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(tokenBucket(t, algorithms.PerSecond(1), 10))
		defer l.Close()
		_, err := l.TryAcquire(10) // empty the bucket
		require.NoError(t, err)

		g := newGrants()
		var wg sync.WaitGroup
		queue(t, &wg, l, g, nil, 5, 1, 1)
		assert.Equal(t, 3, l.Stats().Waiting)

		// One token is back after 1s; the small waiters must not pass the head.
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Empty(t, g.granted())
		_, err = l.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "TryAcquire must fail while anyone waits")

		wg.Wait()
		t0 := time.Unix(946684800, 0) // synctest's epoch, 2000-01-01 UTC
		assert.Equal(t, []int{0, 1, 2}, g.order)
		assert.Equal(t, t0.Add(5*time.Second), g.at[0])
		assert.Equal(t, t0.Add(6*time.Second), g.at[1])
		assert.Equal(t, t0.Add(7*time.Second), g.at[2])
	})
}

func TestExactPacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer l.Close()
		t0 := time.Now()
		g := newGrants()
		var wg sync.WaitGroup
		costs := make([]int64, 20)
		for i := range costs {
			costs[i] = 1
		}
		queue(t, &wg, l, g, nil, costs...)
		wg.Wait()
		require.Len(t, g.order, 20)
		for k := 0; k < 20; k++ {
			assert.Equal(t, k, g.order[k])
			assert.Equal(t, t0.Add(time.Duration(k)*100*time.Millisecond), g.at[k], "waiter %d", k)
		}
	})
}

// lateClock fires every timer late, as an overloaded machine would; grants
// must still be paced from their scheduled instants, not the late wake-ups.
type lateClock struct{ late time.Duration }

func (c lateClock) Now() time.Time { return time.Now() }
func (c lateClock) NewTimer(d time.Duration) actor.Timer {
	return &lateTimer{late: c.late, t: time.NewTimer(d + c.late)}
}

type lateTimer struct {
	late time.Duration
	t    *time.Timer
}

func (t *lateTimer) C() <-chan time.Time        { return t.t.C }
func (t *lateTimer) Reset(d time.Duration) bool { return t.t.Reset(d + t.late) }
func (t *lateTimer) Stop() bool                 { return t.t.Stop() }

func TestTimerLatenessDoesNotLowerTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every wake-up is 30ms late. Were grants stamped with wake-up
		// instants, 100 grants at 10/s would take 100·130ms; stamped with
		// scheduled instants they finish within one lateness of 9.9s.
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithClock(lateClock{30 * time.Millisecond}))
		defer l.Close()
		t0 := time.Now()
		var wg sync.WaitGroup
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				assert.NoError(t, l.Wait(context.Background()))
			}()
		}
		wg.Wait()
		elapsed := time.Since(t0)
		assert.LessOrEqual(t, elapsed, 9900*time.Millisecond+30*time.Millisecond)
		assert.GreaterOrEqual(t, elapsed, 9900*time.Millisecond)
	})
}

func TestCancellationAnywhereGivesCapacityBack(t *testing.T) {
	for _, pos := range []int{0, 2, 4} { // head, middle, tail
		synctest.Test(t, func(t *testing.T) {
			l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
			defer l.Close()
			t0 := time.Now()
			require.True(t, l.Allow()) // TAT is now t0+100ms

			ctxs := make([]context.Context, 5)
			ctx, cancel := context.WithCancel(context.Background())
			ctxs[pos] = ctx
			g := newGrants()
			var wg sync.WaitGroup
			queue(t, &wg, l, g, ctxs, 1, 1, 1, 1, 1)

			cancel()
			synctest.Wait() // returns promptly: no time passes
			assert.ErrorIs(t, g.errs[pos], context.Canceled)
			assert.Equal(t, uint64(1), l.Stats().Canceled)
			assert.Equal(t, 4, l.Stats().Waiting)
			wg.Wait()
			// The four others are granted as if it had never queued.
			require.Len(t, g.order, 4)
			for k, id := range g.order {
				assert.NotEqual(t, pos, id)
				assert.Equal(t, t0.Add(time.Duration(k+1)*100*time.Millisecond), g.at[id], "grant %d", k)
			}
		})
	}
}

func TestCancellationAfterPartOfTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer l.Close()
		t0 := time.Now()
		require.True(t, l.Allow())
		ctx, cancel := context.WithCancel(context.Background())
		g := newGrants()
		var wg sync.WaitGroup
		queue(t, &wg, l, g, []context.Context{nil, ctx, nil}, 1, 1, 1)
		time.Sleep(150 * time.Millisecond) // waiter 0 granted at 100ms
		cancel()
		wg.Wait()
		assert.Equal(t, []int{0, 2}, g.order)
		assert.Equal(t, t0.Add(200*time.Millisecond), g.at[2], "the cancelled waiter's slot goes to the next")
	})
}

func TestDeadlineBeforePredictedGrantFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer l.Close()
		t0 := time.Now()
		require.True(t, l.Allow())
		g := newGrants()
		var wg sync.WaitGroup
		queue(t, &wg, l, g, nil, 1, 1) // granted at 100ms and 200ms

		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		_, err := l.Acquire(ctx, 1) // would be granted at 300ms
		assert.Equal(t, t0, time.Now(), "fails at once")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		var rl *permits.RateLimitError
		require.ErrorAs(t, err, &rl)
		assert.Equal(t, 300*time.Millisecond, rl.RetryAfter)

		// With the queue empty the prediction is the algorithm's RetryAt.
		wg.Wait()
		ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel2()
		_, err = l.Acquire(ctx2, 1)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, permits.ErrRateLimited)

		// A deadline at the predicted grant waits and succeeds.
		ctx3, cancel3 := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel3()
		_, err = l.Acquire(ctx3, 1)
		assert.NoError(t, err)
	})
}

func TestAlreadyCancelledContextFailsEvenWithCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 5))
		defer l.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := l.Acquire(ctx, 1)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, uint64(0), l.Stats().Granted)
	})
}

func TestCostErrorsFailAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 5))
		defer l.Close()
		_, err := l.Acquire(context.Background(), 6)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
		_, err = l.TryAcquire(6)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
		for _, c := range []int64{0, -1} {
			_, err = l.Acquire(context.Background(), c)
			assert.ErrorIs(t, err, permits.ErrInvalidCost)
			_, err = l.TryAcquire(c)
			assert.ErrorIs(t, err, permits.ErrInvalidCost)
		}
		assert.Equal(t, 0, l.Stats().Waiting)
	})
}

func TestTryAcquireCarriesExactRetryAfter(t *testing.T) {
	for name, alg := range map[string]func(t *testing.T) algorithms.Algorithm{
		"gcra whole ns (fast path)":    func(t *testing.T) algorithms.Algorithm { return gcra(t, algorithms.PerSecond(10), 2) },
		"gcra 3/s (through the owner)": func(t *testing.T) algorithms.Algorithm { return gcra(t, algorithms.PerSecond(3), 2) },
		"token bucket":                 func(t *testing.T) algorithms.Algorithm { return tokenBucket(t, algorithms.PerSecond(3), 2) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := alg(t)
				reference := a.(algorithms.Cloner).Clone()
				l := actor.MustNew(a)
				defer l.Close()
				now := time.Now()
				reference.AllowAt(now, 2)
				want := reference.AllowAt(now, 1).RetryAt.Sub(now)

				_, err := l.TryAcquire(2)
				require.NoError(t, err)
				_, err = l.TryAcquire(1)
				var rl *permits.RateLimitError
				require.ErrorAs(t, err, &rl)
				assert.Equal(t, want, rl.RetryAfter)
				time.Sleep(rl.RetryAfter - 1)
				assert.False(t, l.Allow(), "1ns before RetryAfter")
				time.Sleep(time.Nanosecond) // the one nanosecond left: synctest makes it exact
				assert.True(t, l.Allow(), "at RetryAfter")
			})
		})
	}
}

func TestCloseFailsWaitersAndLaterCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(1), 1))
		require.True(t, l.Allow())
		g := newGrants()
		var wg sync.WaitGroup
		queue(t, &wg, l, g, nil, 1, 1, 1)
		require.NoError(t, l.Close())
		wg.Wait()
		for i := 0; i < 3; i++ {
			assert.ErrorIs(t, g.errs[i], permits.ErrClosed)
		}
		_, err := l.Acquire(context.Background(), 1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		_, err = l.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		assert.NoError(t, l.Close(), "idempotent")
		assert.Equal(t, 0, l.Stats().Waiting)
	})
}

func TestCloseReturnsAfterTheGoroutineExits(t *testing.T) {
	// goleak.VerifyTestMain catches a loop that outlives Close; this checks
	// it per test, outside any bubble, with the real clock.
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(1000), 1))
		synctest.Wait()
		require.Equal(t, 1, ownerLoops())
		require.NoError(t, l.Close())
		// Close returned after the loop closed its done channel, its last
		// act. Yield (no timers, no sleeping) so it can leave the frame.
		for i := 0; i < 1000 && ownerLoops() > 0; i++ {
			runtime.Gosched()
		}
		assert.Equal(t, 0, ownerLoops())
	})
}

// ownerLoops counts the goroutines running an owner's loop.
func ownerLoops() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "internal/owner.(*Owner[...]).run(")
}

func TestManyGoroutinesAchieveTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(1000), 10))
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		var mu sync.Mutex
		granted := 0
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if _, err := l.Acquire(ctx, 1); err != nil {
						return
					}
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		// Over the closed interval [0, 10s]: 10 at once, then one per ms.
		assert.InDelta(t, 10*1000+10, granted, 1)
		assert.Equal(t, uint64(granted), l.Stats().Granted)
	})
}

func TestWithMaxWaitAndMaxQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithMaxWait(250*time.Millisecond), actor.WithMaxQueue(2))
		defer l.Close()
		require.True(t, l.Allow())
		g := newGrants()
		var wg sync.WaitGroup
		queue(t, &wg, l, g, nil, 1, 1) // 100ms, 200ms
		_, err := l.Acquire(context.Background(), 1)
		var rl *permits.RateLimitError
		require.ErrorAs(t, err, &rl, "queue full")
		assert.Equal(t, 300*time.Millisecond, rl.RetryAfter)
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
		wg.Wait()

		// Now at 200ms with TAT 300ms; 3 queue slots would need 300ms > 250ms.
		queue(t, &wg, l, g, nil, 1, 1) // 300ms, 400ms: waits 100 and 200ms
		_, err = l.Acquire(context.Background(), 1)
		require.ErrorAs(t, err, &rl, "predicted wait above WithMaxWait")
		assert.Equal(t, 300*time.Millisecond, rl.RetryAfter)
		wg.Wait()
		assert.Equal(t, uint64(2), l.Stats().Rejected)
	})
}

func TestGrantRacingCancellation(t *testing.T) {
	// The grant and the cancellation land in the same instant: either the
	// permit (nil error) or ctx.Err() is a correct answer, and the
	// capacity is accounted either way: a permit counts as granted, a
	// cancellation leaves the slot to the next waiter.
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer l.Close()
		require.True(t, l.Allow())
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		var wg sync.WaitGroup
		var first error
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, first = l.Acquire(ctx, 1) // granted at exactly its deadline
		}()
		synctest.Wait()
		g := newGrants()
		queue(t, &wg, l, g, nil, 1)
		wg.Wait()
		st := l.Stats()
		if first == nil {
			assert.Equal(t, uint64(3), st.Granted)
		} else {
			assert.True(t, errors.Is(first, context.DeadlineExceeded), "%v", first)
			assert.Equal(t, uint64(1), st.Canceled)
			assert.Equal(t, uint64(2), st.Granted)
		}
	})
}

func TestFastPathAllocatesNothing(t *testing.T) {
	g := gcra(t, algorithms.PerSecond(1_000_000_000), 1_000_000)
	l := actor.MustNew(g)
	defer l.Close()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { l.Allow() }), "Allow, allowed")
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = l.TryAcquire(1) }), "TryAcquire, allowed")
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = l.Acquire(context.Background(), 1) }), "Acquire, allowed")

	slow := actor.MustNew(gcra(t, algorithms.Every(time.Hour), 1))
	defer slow.Close()
	slow.Allow()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { slow.Allow() }), "Allow, refused: no error is built")
	st := slow.Stats()
	assert.Equal(t, uint64(1), st.Granted)
	assert.Equal(t, uint64(1001), st.Rejected, "refusals are counted (AllocsPerRun runs once more to warm up)")
}

func TestArrivalsJoinABusyQueueWithoutWakingTheOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer l.Close()
		t0 := time.Now()
		require.True(t, l.Allow())
		head, g := newGrants(), newGrants()
		var wg sync.WaitGroup
		queue(t, &wg, l, head, nil, 1) // the head: queued, the owner's timer armed
		before := actor.Wakes(l)

		costs := make([]int64, 10)
		for i := range costs {
			costs[i] = 1
		}
		queue(t, &wg, l, g, nil, costs...)
		assert.Equal(t, before, actor.Wakes(l), "ten arrivals, and the owner never woke")
		assert.Equal(t, 11, l.Stats().Waiting, "they count as waiting")

		wg.Wait()
		assert.Equal(t, t0.Add(100*time.Millisecond), head.at[0])
		require.Len(t, g.order, 10)
		for k, id := range g.order {
			assert.Equal(t, k, id, "FIFO")
			assert.Equal(t, t0.Add(time.Duration(k+2)*100*time.Millisecond), g.at[id], "waiter %d", k)
		}
	})
}

// TestCancellationStressAgainstStats runs on the real clock: many callers
// cancel at random while others join a busy queue (many of them without
// waking the owner), and the counts must agree with what the callers saw.
// -race checks that no pooled call is reused while the owner holds it.
func TestCancellationStressAgainstStats(t *testing.T) {
	l := actor.MustNew(gcra(t, algorithms.PerSecond(20000), 1))
	defer l.Close()
	var granted, cancelled atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				ctx, cancel := context.WithCancel(context.Background())
				if (g+i)%3 == 0 {
					go cancel() // races the Acquire
				}
				_, err := l.Acquire(ctx, 1)
				cancel()
				switch {
				case err == nil:
					granted.Add(1)
				case errors.Is(err, context.Canceled):
					cancelled.Add(1)
				default:
					t.Errorf("unexpected error %v", err)
				}
			}
		}()
	}
	wg.Wait()
	st := l.Stats()
	assert.Equal(t, uint64(granted.Load()), st.Granted)
	assert.Equal(t, int64(64*100), granted.Load()+cancelled.Load())
	assert.LessOrEqual(t, st.Canceled, uint64(cancelled.Load()), "queued waiters that left; the others ended before queuing")
	assert.Equal(t, 0, st.Waiting)
}
