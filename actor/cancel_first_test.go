package actor_test

import (
	"context"
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

// The owner handles the cancellations it takes before the arrivals it
// takes with them: an arrival is judged against what is left once the
// waiters that gave up are gone. Here W waits for the unit due at 100ms;
// at 50ms N arrives with a deadline at 150ms and W gives up, both in the
// one batch (the owner is held at its clock reading until both are in).
// N is granted W's unit at 100ms; judged first, behind W, its grant at
// 200ms missed its deadline and it was refused, though the cancellation
// beside it had given the unit back.
func TestACancellationIsHandledBeforeTheArrivalsOfItsBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		clock := &holdClock{}
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithClock(clock))
		defer l.Close()
		require.True(t, l.Allow())
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var wErr error
		wg.Go(func() { _, wErr = l.Acquire(ctx, 1) })
		synctest.Wait() // W queued, the owner asleep on its timer
		time.Sleep(50 * time.Millisecond)

		ownerGo := hold(&clock.owner)
		var nAt time.Duration
		var nErr error
		wg.Go(func() {
			dl, stop := context.WithDeadline(context.Background(), t0.Add(150*time.Millisecond))
			defer stop()
			_, nErr = l.Acquire(dl, 1)
			nAt = time.Since(t0)
		})
		synctest.Wait() // N sent; the owner woke for it and is held at its reading
		cancel()
		synctest.Wait() // W's cancellation sent
		close(ownerGo)
		wg.Wait()
		assert.ErrorIs(t, wErr, context.Canceled)
		assert.NotErrorIs(t, wErr, permits.ErrRateLimited)
		require.NoError(t, nErr, "N fits once W is gone")
		assert.Equal(t, 100*time.Millisecond, nAt, "N has W's unit")
	})
}
