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
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// A TryAcquire refused behind a key's queue says how long a newcomer would
// wait behind the queue's tail, not behind its head: with 49 waiting at a
// 10 ms interval, about 490 ms, not 10 ms.
func TestTryAcquireBehindAKeysQueueSaysTheTailsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(100), 1))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for i := range 49 {
			wg.Go(func() {
				if _, err := l.Acquire(context.Background(), "k", 1); err != nil {
					t.Errorf("waiter %d: %v", i, err)
				}
			})
			synctest.Wait()
		}
		for range 3 { // the first may ask the owner; those after read what it published
			_, err = l.TryAcquire("k", 1)
			wait, ok := permits.RetryAfter(err)
			require.True(t, ok, "%v", err)
			assert.GreaterOrEqual(t, wait, 490*time.Millisecond, "behind the tail")
			assert.LessOrEqual(t, wait, 500*time.Millisecond, "within one interval of it")
		}
		wg.Wait()
	})
}

// The answer behind a key's queue needs nothing of the shard's owner while
// only other keys' requests are on their way to it: held at its clock
// reading with another key's Acquire in its inbox, it does not delay a
// TryAcquire on k, which reads what the owner published for k. Before, any
// request in the shard's inbox sent the TryAcquire to the owner, and it
// waited for the owner to be released.
func TestTryAcquireBehindAKeysQueueDoesNotWaitForOtherKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &heldClock{}
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(100), 1), keyed.WithShards(1), keyed.WithClock(clock))
		for _, k := range []string{"k", "other"} {
			_, err := l.TryAcquire(k, 1)
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() { _, _ = l.Acquire(context.Background(), "k", 1) })
			synctest.Wait()
		}
		_, err := l.TryAcquire("k", 1) // may ask the owner, which publishes k's tail
		require.Error(t, err)

		release := make(chan struct{})
		clock.owner.Store(&release)
		wg.Go(func() { _, _ = l.Acquire(context.Background(), "other", 1) })
		synctest.Wait() // the owner woke for it and is held at its reading
		var wait time.Duration
		answered := make(chan struct{})
		go func() {
			_, err := l.TryAcquire("k", 1)
			wait, _ = permits.RetryAfter(err)
			close(answered)
		}()
		synctest.Wait()
		select {
		case <-answered:
		default:
			t.Fatal("the TryAcquire on k waited for the owner")
		}
		assert.GreaterOrEqual(t, wait, 50*time.Millisecond, "behind k's five")
		assert.LessOrEqual(t, wait, 60*time.Millisecond, "within one interval")
		close(release)
		wg.Wait()
	})
}
