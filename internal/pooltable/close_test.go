package pooltable_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

func TestCloseWhileInUseFailsCallersWithoutPanicking(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	synctest.Test(t, func(t *testing.T) {
		tb, _ := table(t, 1, actor.WithLimits(1, 1, 1))
		e, err := tb.Get("a")
		require.NoError(t, err)
		held, err := e.Pool.Acquire(context.Background(), 1)
		require.NoError(t, err)
		waited := make(chan error, 1)
		go func() {
			_, err := e.Pool.Acquire(context.Background(), 1)
			waited <- err
		}()
		synctest.Wait() // the second caller is queued behind the first
		require.NoError(t, tb.Close())
		assert.ErrorIs(t, <-waited, permits.ErrClosed, "a waiter is failed, not left hanging")
		_, err = tb.Get("a")
		assert.ErrorIs(t, err, permits.ErrClosed)
		_, err = tb.Get("new")
		assert.ErrorIs(t, err, permits.ErrClosed, "no pool is made after Close")
		_, err = e.Pool.Acquire(context.Background(), 1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		assert.NotPanics(t, func() { e.Pool.Done(held, actor.Success) }, "a permit held over Close ends harmlessly")
		assert.NoError(t, tb.Close(), "Close is idempotent")
	})
}

func TestCloseRacingGetsLeavesNoGoroutine(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	tb, _ := table(t, 8)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range 4 {
		wg.Go(func() {
			<-start
			for k := range 32 {
				if _, err := tb.Get(fmt.Sprint(c, "-", k)); err != nil {
					assert.ErrorIs(t, err, permits.ErrClosed)
					return
				}
			}
		})
	}
	close(start)
	require.NoError(t, tb.Close())
	wg.Wait()
	assert.LessOrEqual(t, tb.Len(), 8)
	_, err := tb.Get("after")
	assert.ErrorIs(t, err, permits.ErrClosed)
}
