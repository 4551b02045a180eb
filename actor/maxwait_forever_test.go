package actor_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
)

// WithMaxWait(math.MaxInt64) is how users write "no bound": a waiter
// whose grant the owner cannot predict exactly (an algorithm without a
// Cloner, or any lane, whose predictions are lower bounds) is listed to
// expire at its arrival plus the bound, which wrapped to an instant in the
// past and refused every one of them on arrival. The bound saturates: they
// wait and are granted at their turn.
func TestWithMaxWaitForeverNeverExpiresAWaiter(t *testing.T) {
	for _, c := range []struct {
		name string
		new  func(t *testing.T) (func(ctx context.Context) error, func())
	}{
		{"without a Cloner", func(t *testing.T) (func(context.Context) error, func()) {
			l := actor.MustNew(noCloner{gcra(t, algorithms.PerSecond(10), 1)}, actor.WithMaxWait(math.MaxInt64))
			return func(ctx context.Context) error { _, err := l.Acquire(ctx, 1); return err }, func() { l.Close() }
		}},
		{"in a lane", func(t *testing.T) (func(context.Context) error, func()) {
			l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithMaxWait(math.MaxInt64))
			ln, err := l.Lane("a", 1)
			require.NoError(t, err)
			return func(ctx context.Context) error { _, err := ln.Acquire(ctx, 1); return err }, func() { l.Close() }
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				acquire, closeIt := c.new(t)
				defer closeIt()
				time.Sleep(time.Second) // arrivals after the limiter's epoch: arrival + MaxInt64 overflows
				t0 := time.Now()
				require.NoError(t, acquire(context.Background()), "the burst")
				// Three waiters queued at once, in order: the owner can
				// predict none of their grants exactly.
				var wg sync.WaitGroup
				got := make([]time.Duration, 3)
				for i := range got {
					wg.Go(func() {
						if err := acquire(context.Background()); err != nil {
							t.Errorf("waiter %d: %v", i, err)
							return
						}
						got[i] = time.Since(t0)
					})
					synctest.Wait()
				}
				wg.Wait()
				assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}, got, "each at its turn")
			})
		})
	}
}
