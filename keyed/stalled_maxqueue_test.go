package keyed_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil/ownermodel"
	"github.com/sluicehq/sluice/keyed"
)

// A waits on key k, due at 100ms; its shard's owner stalls at the end of
// that wake-up until 200ms. B's Acquire, stamped at 150ms, is handled in
// the next wake-up, before its Schedule: the heads of B's key due by B's
// stamp are granted first, as actor does, so WithMaxQueue(1) does not
// count A, which was due 50ms before B came, and B queues.
func TestAKeysHeadDueBeforeAnArrivalIsNotCountedAgainstIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := ownermodel.NewPassStall("Schedule(", 200*time.Millisecond)
		l, err := keyed.NewGCRA[string](algorithms.PerSecond(10), 1, keyed.WithClock(clock), keyed.WithMaxQueue(1))
		require.NoError(t, err)
		defer l.Close()
		_, err = l.TryAcquire("k", 1)
		require.NoError(t, err, "the burst, at 0")
		synctest.Wait()
		var wg sync.WaitGroup
		clock.Arm()
		wg.Go(func() { _, err := l.Acquire(context.Background(), "k", 1); assert.NoError(t, err, "A, due at 100ms") })
		time.Sleep(150 * time.Millisecond)
		_, err = l.Acquire(context.Background(), "k", 1)
		assert.NoError(t, err, "B at 150ms: A was due at 100ms, the queue had room then")
		wg.Wait()
	})
}
