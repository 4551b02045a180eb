package permits_test

import (
	"context"
	"fmt"
	"math/rand/v2"
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

func rateLimiter(t testing.TB, r algorithms.Rate, burst int64) *actor.Limiter {
	t.Helper()
	g, err := algorithms.NewGCRA(r, burst)
	require.NoError(t, err)
	l := actor.MustNew(g)
	t.Cleanup(func() { l.Close() })
	return l
}

func newPool(t testing.TB, size int64) *actor.Pool {
	t.Helper()
	p, err := actor.NewPool(size)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// free reports whether lim grants cost now, giving it back (refunding a
// rate grant) so that the probe changes nothing.
func free(t *testing.T, lim permits.Limiter, cost int64) bool {
	t.Helper()
	if r, ok := lim.(permits.Refunder); ok {
		g, err := r.TryAcquireGrant(cost)
		if err != nil {
			return false
		}
		require.True(t, r.Refund(g))
		return true
	}
	p, err := lim.TryAcquire(cost)
	if err != nil {
		return false
	}
	p.Release()
	return true
}

func TestAllHoldsEveryPartAndReleasesThemTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		requests := rateLimiter(t, algorithms.PerSecond(10), 2)
		tokens := rateLimiter(t, algorithms.PerMinute(6000), 1000)
		slots := newPool(t, 2)
		lim := permits.All(permits.FixedCost(requests, 1), tokens, permits.FixedCost(slots, 1))

		p, err := lim.Acquire(context.Background(), 700)
		require.NoError(t, err)
		assert.Equal(t, int64(700), p.Cost())
		assert.Equal(t, int64(1), slots.Stats().InFlight, "the pool part costs 1, not 700")
		assert.False(t, free(t, tokens, 301), "700 tokens taken")
		assert.True(t, free(t, tokens, 300))
		assert.True(t, free(t, requests, 1))
		assert.False(t, free(t, requests, 2), "one request taken")

		p.Release()
		p.Release()
		assert.Equal(t, int64(0), slots.Stats().InFlight)
		assert.False(t, free(t, tokens, 301), "rate capacity comes back with time, not by Release")
	})
}

func TestAllGivesEverythingBackWhenALaterPartFails(t *testing.T) {
	type failure struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		cost int64
		want error
	}
	for _, f := range []failure{
		{"deadline before the predicted grant", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, 600, context.DeadlineExceeded},
		{"cancelled while waiting", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		}, 600, context.Canceled},
		{"cost above a part's capacity", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, 2000, permits.ErrCostExceedsCapacity},
	} {
		t.Run(f.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				requests := rateLimiter(t, algorithms.PerSecond(10), 1)
				tokens := rateLimiter(t, algorithms.PerMinute(60000), 1000) // 1000/s
				slots := newPool(t, 1)
				lim := permits.All(permits.FixedCost(slots, 1), permits.FixedCost(requests, 1), tokens)
				// Leave 500 tokens: the next 600 wait 100ms.
				_, err := tokens.TryAcquire(500)
				require.NoError(t, err)

				ctx, cancel := f.ctx()
				defer cancel()
				_, err = lim.Acquire(ctx, f.cost)
				assert.ErrorIs(t, err, f.want)

				// Nothing stays consumed: the slot is free, the request
				// slot is back, and the tokens are as they were.
				assert.Equal(t, int64(0), slots.Stats().InFlight)
				assert.True(t, free(t, requests, 1), "the request grant was refunded")
				assert.Equal(t, 0, requests.Stats().Waiting)
				assert.Equal(t, 0, tokens.Stats().Waiting)
			})
		})
	}
}

func TestAllTakesPoolsBeforeRates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		requests := rateLimiter(t, algorithms.PerSecond(10), 1)
		slots := newPool(t, 1)
		lim := permits.All(permits.FixedCost(requests, 1), permits.FixedCost(slots, 1)) // rate given first
		hold, err := slots.Acquire(context.Background(), 1)
		require.NoError(t, err)

		done := make(chan error, 1)
		go func() {
			p, err := lim.Acquire(context.Background(), 1)
			if err == nil {
				p.Release()
			}
			done <- err
		}()
		synctest.Wait()
		assert.True(t, free(t, requests, 1), "no rate spent while waiting for a slot")
		hold.Release()
		assert.NoError(t, <-done)
	})
}

func TestAllRetakesGrantsMadeStaleByAWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		requests := rateLimiter(t, algorithms.PerSecond(10), 1)     // one per 100ms
		tokens := rateLimiter(t, algorithms.PerMinute(60000), 1000) // 1000 per s
		lim := permits.All(permits.FixedCost(requests, 1), tokens)
		_, err := tokens.TryAcquire(1000)
		require.NoError(t, err)

		// The request slot is granted at t0, then the tokens wait 500ms.
		p, err := lim.Acquire(context.Background(), 500)
		require.NoError(t, err)
		p.Release()
		require.Equal(t, t0.Add(500*time.Millisecond), time.Now())
		// Had the slot granted at t0 been kept, the next would be free from
		// t0+100ms; it was refunded and taken again at t0+500ms.
		assert.False(t, free(t, requests, 1), "the request slot was granted when the call could go")
		time.Sleep(100 * time.Millisecond)
		assert.True(t, free(t, requests, 1))
	})
}

func TestAllTryAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		requests := rateLimiter(t, algorithms.PerSecond(10), 1)
		tokens := rateLimiter(t, algorithms.PerMinute(60000), 1000)
		slots := newPool(t, 1)
		lim := permits.All(permits.FixedCost(slots, 1), permits.FixedCost(requests, 1), tokens)

		_, err := lim.TryAcquire(1001)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
		assert.Equal(t, int64(0), slots.Stats().InFlight)
		assert.True(t, free(t, requests, 1))

		p, err := lim.TryAcquire(900)
		require.NoError(t, err)
		_, err = lim.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "the slot is taken")
		p.Release()
		_, err = lim.TryAcquire(200)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "requests refuse for 100ms")
		assert.Equal(t, int64(0), slots.Stats().InFlight)
		assert.True(t, free(t, tokens, 100), "the refusal gave the tokens back")
		assert.False(t, free(t, tokens, 101))
		_, err = lim.TryAcquire(0)
		assert.ErrorIs(t, err, permits.ErrInvalidCost)
	})
}

func TestAllTryAcquireFailsWhileAnotherIsAdmitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		requests := rateLimiter(t, algorithms.PerSecond(10), 1)
		tokens := rateLimiter(t, algorithms.PerMinute(60000), 1000)
		lim := permits.All(permits.FixedCost(requests, 1), tokens)
		_, err := tokens.TryAcquire(1000)
		require.NoError(t, err)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := lim.Acquire(context.Background(), 100) // waits 100ms
			assert.NoError(t, err)
			p.Release()
		}()
		synctest.Wait()
		_, err = lim.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		wg.Wait()
	})
}

func TestAllWithoutLimitersAndNested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := permits.All().Acquire(context.Background(), 3)
		require.NoError(t, err)
		p.Release()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = permits.All().Acquire(ctx, 1)
		assert.ErrorIs(t, err, context.Canceled)

		a, b := newPool(t, 4), newPool(t, 4)
		nested := permits.All(permits.FixedCost(permits.All(a, permits.FixedCost(b, 3)), 1))
		q, err := nested.Acquire(context.Background(), 2)
		require.NoError(t, err)
		assert.Equal(t, int64(1), a.Stats().InFlight, "the outer FixedCost applies to a")
		assert.Equal(t, int64(3), b.Stats().InFlight, "the inner one wins for b")
		q.Release()
		assert.Equal(t, int64(0), a.Stats().InFlight+b.Stats().InFlight)
	})
}

func TestAllAllocatesNothingOnceWarm(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	requests := rateLimiter(t, algorithms.PerSecond(1_000_000_000), 1000)
	tokens := rateLimiter(t, algorithms.PerSecond(1_000_000_000), 1000)
	slots := newPool(t, 1<<20)
	lim := permits.All(permits.FixedCost(requests, 1), tokens, permits.FixedCost(slots, 1))
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		p, err := lim.Acquire(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		p.Release()
	})
	assert.Zero(t, allocs)
}

// TestAllPropertyNothingStaysConsumed runs two identical worlds through the
// same random successful requests; world A also makes requests that fail
// part-way (deadlines, cancellations, a cost above a part's capacity). If
// a failure left anything consumed, a later request would be decided
// differently in A than in B.
func TestAllPropertyNothingStaysConsumed(t *testing.T) {
	for seed := range uint64(25) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { allProperty(t, seed) })
		})
	}
}

type world struct {
	lim   permits.Limiter
	parts []permits.Limiter
	slots *actor.Pool
	held  []permits.Permit
}

func newWorld(t *testing.T) *world {
	mk := func(a algorithms.Algorithm, err error) *actor.Limiter {
		require.NoError(t, err)
		l := actor.MustNew(a)
		t.Cleanup(func() { l.Close() })
		return l
	}
	requests := mk(algorithms.NewGCRA(algorithms.PerSecond(20), 2))
	tokens := mk(algorithms.NewTokenBucket(algorithms.PerSecond(500), 300))
	window := mk(algorithms.NewSlidingWindow(algorithms.Rate{Count: 2000, Per: time.Second}))
	fixed := mk(algorithms.NewFixedWindow(algorithms.Rate{Count: 1500, Per: 700 * time.Millisecond}))
	leaky := mk(algorithms.NewLeakyBucket(algorithms.PerSecond(300), 400))
	slots := newPool(t, 3)
	return &world{
		lim: permits.All(permits.FixedCost(requests, 1), tokens, window, fixed,
			leaky, permits.FixedCost(slots, 1)),
		parts: []permits.Limiter{requests, tokens, window, fixed, leaky, slots},
		slots: slots,
	}
}

func allProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 42))
	a, b := newWorld(t), newWorld(t)
	for step := 0; step < 60; step++ {
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		switch k := rng.IntN(10); {
		case k < 4: // the same TryAcquire in both worlds
			cost := 1 + rng.Int64N(300)
			pa, ea := a.lim.TryAcquire(cost)
			pb, eb := b.lim.TryAcquire(cost)
			require.Equal(t, eb == nil, ea == nil, "step %d: TryAcquire(%d): A %v, B %v", step, cost, ea, eb)
			if ea == nil {
				a.held, b.held = append(a.held, pa), append(b.held, pb)
			}
		case k < 5: // release the oldest held request in both
			if len(a.held) > 0 {
				a.held[0].Release()
				b.held[0].Release()
				a.held, b.held = a.held[1:], b.held[1:]
			}
		default: // a request in A alone, which fails part-way
			cost := 1 + rng.Int64N(300)
			if rng.IntN(4) == 0 {
				cost = 301 + rng.Int64N(100) // above the token bucket's capacity
			}
			ctx, cancel := context.WithCancel(context.Background())
			if rng.IntN(2) == 0 {
				// A deadline that a part predicts it cannot meet fails at
				// once, after the parts before it granted.
				ctx, cancel = context.WithTimeout(context.Background(), time.Duration(1+rng.IntN(20))*time.Millisecond)
			}
			type answer struct {
				p   permits.Permit
				err error
			}
			done := make(chan answer, 1)
			go func() {
				p, err := a.lim.Acquire(ctx, cost)
				done <- answer{p, err}
			}()
			synctest.Wait()
			var got answer
			select {
			case got = <-done: // decided without waiting
			default: // waiting somewhere: give up
				cancel()
				got = <-done
				require.Error(t, got.err, "step %d: nothing could grant it in the same instant", step)
			}
			cancel()
			if got.err == nil {
				// Granted at once: B, in the same state, grants it too.
				pb, err := b.lim.Acquire(context.Background(), cost)
				require.NoError(t, err, "step %d", step)
				a.held, b.held = append(a.held, got.p), append(b.held, pb)
			}
		}
		require.Equal(t, b.slots.Stats().InFlight, a.slots.Stats().InFlight, "step %d", step)
	}
	for _, p := range append(a.held, b.held...) {
		p.Release()
	}
	// Probe what each part has left, the same way in both.
	for i := range a.parts {
		for _, cost := range []int64{1, 10, 100, 300} {
			require.Equal(t, free(t, b.parts[i], cost), free(t, a.parts[i], cost), "part %d cost %d", i, cost)
		}
	}
}

// Two requests queued on a pool, in order, are granted by one release in
// one batch; the Go scheduler may wake the later one first. All must still
// admit them in the order they came: the later one never takes the rates
// first.
func TestAllKeepsArrivalOrderAcrossStages(t *testing.T) {
	for round := 0; round < 20; round++ {
		synctest.Test(t, func(t *testing.T) {
			pool := newPool(t, 2)
			defer pool.Close()
			requests := rateLimiter(t, algorithms.PerSecond(10), 1)
			defer requests.Close()
			tokens := rateLimiter(t, algorithms.PerSecond(1000), 1000)
			defer tokens.Close()
			lim := permits.All(permits.FixedCost(pool, 1), permits.FixedCost(requests, 1), tokens)

			hold, err := pool.Acquire(context.Background(), 2) // the pool is full
			require.NoError(t, err)
			var mu sync.Mutex
			var order []string
			var wg sync.WaitGroup
			for _, name := range []string{"first", "second"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p, err := lim.Acquire(context.Background(), 1)
					if assert.NoError(t, err) {
						mu.Lock()
						order = append(order, name)
						mu.Unlock()
						p.Release()
					}
				}()
				synctest.Wait() // "first" is waiting before "second" starts
			}
			hold.Release() // frees both slots at once
			wg.Wait()
			assert.Equal(t, []string{"first", "second"}, order)
		})
	}
}
