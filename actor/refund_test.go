package actor_test

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

// refundable builds each algorithm of package algorithms with capacity 5
// and 10 units per second.
var refundable = map[string]func(t *testing.T) algorithms.Algorithm{
	"gcra": func(t *testing.T) algorithms.Algorithm { return gcra(t, algorithms.PerSecond(10), 5) },
	"gcra 3/s": func(t *testing.T) algorithms.Algorithm {
		return gcra(t, algorithms.PerSecond(3), 5)
	},
	"token bucket": func(t *testing.T) algorithms.Algorithm { return tokenBucket(t, algorithms.PerSecond(10), 5) },
	"leaky bucket": func(t *testing.T) algorithms.Algorithm {
		b, err := algorithms.NewLeakyBucket(algorithms.PerSecond(10), 5)
		require.NoError(t, err)
		return b
	},
	"sliding window": func(t *testing.T) algorithms.Algorithm {
		w, err := algorithms.NewSlidingWindow(algorithms.Rate{Count: 5, Per: 500 * time.Millisecond})
		require.NoError(t, err)
		return w
	},
	"fixed window": func(t *testing.T) algorithms.Algorithm {
		w, err := algorithms.NewFixedWindow(algorithms.Rate{Count: 5, Per: 500 * time.Millisecond})
		require.NoError(t, err)
		return w
	},
}

// sameDecisions asks a and b the same random questions along a timeline
// from t0 and requires the same answers.
func sameDecisions(t *testing.T, rng *rand.Rand, a, b algorithms.Algorithm, t0 time.Time, what string) {
	t.Helper()
	now := t0
	for k := 0; k < 40; k++ {
		now = now.Add(time.Duration(rng.IntN(80)) * time.Millisecond)
		cost := 1 + rng.Int64N(a.Capacity())
		da, db := a.AllowAt(now, cost), b.AllowAt(now, cost)
		require.Equal(t, db.Allowed, da.Allowed, "%s: decision %d at +%v for %d", what, k, now.Sub(t0), cost)
		require.True(t, db.RetryAt.Equal(da.RetryAt), "%s: decision %d RetryAt", what, k)
	}
}

// TestRefundRightAfterAdmissionIsAsIfNeverAdmitted: for every algorithm, an
// admission refunded before anything else is admitted leaves a state that
// decides every later request as if it had never happened, whether the
// refund comes at once or later.
func TestRefundRightAfterAdmissionIsAsIfNeverAdmitted(t *testing.T) {
	for name, mk := range refundable {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(50) {
				rng := rand.New(rand.NewPCG(seed, 1))
				a := mk(t)
				t0 := time.Unix(1_000_000, 0)
				now := t0
				// Some history both share.
				for range rng.IntN(6) {
					now = now.Add(time.Duration(rng.IntN(200)) * time.Millisecond)
					a.AllowAt(now, 1+rng.Int64N(a.Capacity()))
				}
				b := a.(algorithms.Cloner).Clone() // never admits the refunded cost
				now = now.Add(time.Duration(rng.IntN(100)) * time.Millisecond)
				cost := 1 + rng.Int64N(a.Capacity())
				d := a.AllowAt(now, cost)
				if !d.Allowed {
					continue
				}
				b.AllowAt(now, 0) // both have seen the instant
				later := now.Add(time.Duration(rng.IntN(3)) * time.Duration(rng.IntN(300)) * time.Millisecond)
				a.(algorithms.Refunder).RefundAt(later, d.Receipt)
				b.AllowAt(later, 0)
				sameDecisions(t, rng, a, b, later, fmt.Sprintf("seed %d", seed))
			}
		})
	}
}

func TestGCRARefundNeverBanksIdleTime(t *testing.T) {
	g := gcra(t, algorithms.PerSecond(10), 2) // 100ms per unit, burst 2
	t0 := time.Unix(1_000_000, 0)
	d := g.AllowAt(t0, 2) // TAT t0+200ms
	require.True(t, d.Allowed)
	// At +150ms the TAT is +200ms: giving back 2 units (200ms) would bring
	// it to t0, before now; it stops at now, so only the burst passes.
	g.RefundAt(t0.Add(150*time.Millisecond), d.Receipt)
	assert.True(t, g.AllowAt(t0.Add(150*time.Millisecond), 2).Allowed)
	assert.False(t, g.AllowAt(t0.Add(150*time.Millisecond), 1).Allowed, "no more than the burst at once")
}

func TestBucketsRefundWithinBounds(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	tb := tokenBucket(t, algorithms.PerSecond(1), 5)
	d := tb.AllowAt(t0, 1)
	require.True(t, d.Allowed)
	tb.RefundAt(t0, d.Receipt)
	tb.RefundAt(t0, d.Receipt) // twice: nothing more, the bucket stays at capacity
	assert.True(t, tb.AllowAt(t0, 5).Allowed)
	assert.False(t, tb.AllowAt(t0, 1).Allowed)

	lb, err := algorithms.NewLeakyBucket(algorithms.PerSecond(1), 5)
	require.NoError(t, err)
	d = lb.AllowAt(t0, 1)
	require.True(t, d.Allowed)
	lb.RefundAt(t0, d.Receipt)
	lb.RefundAt(t0, d.Receipt) // twice: nothing more, the bucket stays empty
	assert.True(t, lb.AllowAt(t0, 5).Allowed)
	assert.False(t, lb.AllowAt(t0, 1).Allowed)
}

func TestSlidingWindowRefundIsExactDespiteLaterAdmissions(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	w, err := algorithms.NewSlidingWindow(algorithms.Rate{Count: 5, Per: time.Second})
	require.NoError(t, err)
	ref, err := algorithms.NewSlidingWindow(algorithms.Rate{Count: 5, Per: time.Second})
	require.NoError(t, err)
	d := w.AllowAt(t0, 3) // refunded below
	require.True(t, d.Allowed)
	require.True(t, w.AllowAt(t0.Add(400*time.Millisecond), 2).Allowed) // stays
	ref.AllowAt(t0, 0)
	require.True(t, ref.AllowAt(t0.Add(400*time.Millisecond), 2).Allowed)
	w.RefundAt(t0.Add(500*time.Millisecond), d.Receipt)
	ref.AllowAt(t0.Add(500*time.Millisecond), 0)
	// Only the event at +400ms counts now: 3 more fit, until it leaves at
	// +1.4s.
	sameDecisions(t, rand.New(rand.NewPCG(7, 7)), w, ref, t0.Add(500*time.Millisecond), "after refund")
}

func TestFixedWindowRefundsOnlyItsOwnWindow(t *testing.T) {
	t0 := time.Unix(1_000_000, 0) // a window boundary for 1s windows
	w, err := algorithms.NewFixedWindow(algorithms.Rate{Count: 5, Per: time.Second})
	require.NoError(t, err)
	require.True(t, w.AllowAt(t0.Add(900*time.Millisecond), 3).Allowed)
	d := w.AllowAt(t0.Add(900*time.Millisecond), 2)
	require.True(t, d.Allowed)
	w.RefundAt(t0.Add(950*time.Millisecond), d.Receipt)
	d = w.AllowAt(t0.Add(960*time.Millisecond), 2)
	assert.True(t, d.Allowed, "same window: given back")

	require.True(t, w.AllowAt(t0.Add(1100*time.Millisecond), 5).Allowed)
	w.RefundAt(t0.Add(1200*time.Millisecond), d.Receipt)
	assert.False(t, w.AllowAt(t0.Add(1200*time.Millisecond), 1).Allowed, "a grant of an earlier window gives nothing to this one")
}

func TestLimiterGrantCarriesInstantAndWait(t *testing.T) {
	for name, mk := range refundable {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := actor.MustNew(mk(t))
				defer l.Close()
				t0 := time.Now()
				g, err := l.AcquireGrant(context.Background(), 5)
				require.NoError(t, err)
				assert.Equal(t, t0, g.At)
				assert.False(t, g.Waited)
				assert.Equal(t, int64(5), g.Cost())

				g2, err := l.AcquireGrant(context.Background(), 1)
				require.NoError(t, err)
				assert.True(t, g2.Waited)
				assert.Equal(t, time.Now(), g2.At, "granted at its scheduled instant")
				assert.True(t, time.Now().After(t0))

				_, err = l.TryAcquireGrant(5)
				assert.ErrorIs(t, err, permits.ErrRateLimited)
			})
		})
	}
}

func TestLimiterRefundGivesCapacityBack(t *testing.T) {
	for name, mk := range refundable {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := actor.MustNew(mk(t))
				defer l.Close()
				g, err := l.TryAcquireGrant(5)
				require.NoError(t, err)
				_, err = l.TryAcquire(1)
				require.ErrorIs(t, err, permits.ErrRateLimited)
				assert.True(t, l.Refund(g))
				_, err = l.TryAcquire(5)
				assert.NoError(t, err, "the refunded units are back at once")
			})
		})
	}
}

func TestLimiterRefundLetsWaitersBehindTheHeadIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(tokenBucket(t, algorithms.PerSecond(1), 4))
		defer l.Close()
		t0 := time.Now()
		g, err := l.TryAcquireGrant(4)
		require.NoError(t, err)
		gr := newGrants()
		var wg sync.WaitGroup
		queue(t, &wg, l, gr, nil, 1, 2) // 1 at +1s, 2 at +3s
		assert.True(t, l.Refund(g))
		wg.Wait()
		// The refunded tokens let both in at once, the head first.
		assert.Equal(t, t0, gr.at[0])
		assert.Equal(t, t0, gr.at[1])
	})
}

// noRefund is an algorithm without RefundAt.
type noRefund struct{ algorithms.Algorithm }

func TestLimiterRefundReportsWhenItCannot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(noRefund{tokenBucket(t, algorithms.PerSecond(1), 2)})
		g, err := l.AcquireGrant(context.Background(), 2)
		require.NoError(t, err)
		assert.False(t, l.Refund(g), "the algorithm cannot")
		_, err = l.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "nothing came back")
		require.NoError(t, l.Close())

		l2 := actor.MustNew(tokenBucket(t, algorithms.PerSecond(1), 2))
		g, err = l2.AcquireGrant(context.Background(), 2)
		require.NoError(t, err)
		require.NoError(t, l2.Close())
		assert.False(t, l2.Refund(g), "closed")
		assert.False(t, l2.Refund(permits.Grant{}), "nothing to refund")
	})
}

func TestGrantAndRefundAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	l := actor.MustNew(gcra(t, algorithms.PerSecond(1_000_000_000), 1000)) // fast path
	defer l.Close()
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		g, err := l.AcquireGrant(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		l.Refund(g)
	})
	assert.Zero(t, allocs)

	tb := actor.MustNew(tokenBucket(t, algorithms.PerSecond(1_000_000_000), 1<<40)) // through the owner
	defer tb.Close()
	allocs = testing.AllocsPerRun(1000, func() {
		g, err := tb.AcquireGrant(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		tb.Refund(g)
	})
	assert.Zero(t, allocs)
}
