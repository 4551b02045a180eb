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

// bucketOf is the WaitHistogram bucket that holds d.
func bucketOf(d time.Duration) int {
	var h permits.WaitHistogram
	h.Waited(d)
	for i, n := range h.Snapshot().Counts {
		if n == 1 {
			return i
		}
	}
	panic("no bucket")
}

// Each granted Acquire tells the observer how long it waited, from its
// arrival to the instant it was granted at: three queued behind a 10/s
// limit wait 100, 200 and 300 ms; one granted at once on the fast path,
// and one through a lane, are counted too; TryAcquire is not.
func TestEachGrantedAcquireTellsTheObserverHowLongItWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h permits.WaitHistogram
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithObserver(&h))
		defer l.Close()
		require.True(t, l.Allow())
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { _, _ = l.Acquire(context.Background(), 1) })
			synctest.Wait()
		}
		wg.Wait()
		_, err := l.TryAcquire(1)
		require.Error(t, err, "refused: not a wait")
		time.Sleep(time.Second)
		_, err = l.Acquire(context.Background(), 1) // at once, lock-free
		require.NoError(t, err)
		ln, err := l.Lane("batch", 1)
		require.NoError(t, err)
		_, err = ln.Acquire(context.Background(), 1) // 100ms behind the last grant
		require.NoError(t, err)

		s := h.Snapshot()
		want := [permits.WaitBuckets]uint64{}
		want[0]++
		for _, d := range []time.Duration{100, 200, 300, 100} {
			want[bucketOf(d*time.Millisecond)]++
		}
		assert.Equal(t, want, s.Counts)
		assert.Equal(t, 700*time.Millisecond, s.Sum)
	})
}

// A Pool's waiter is told its wait until units came back; one granted at
// once, 0.
func TestAPoolsWaiterTellsTheObserverItsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h permits.WaitHistogram
		p, err := actor.NewPool(1, nil, actor.WithObserver(&h))
		require.NoError(t, err)
		defer p.Close()
		first, err := p.Acquire(context.Background(), 1)
		require.NoError(t, err)
		var wg sync.WaitGroup
		wg.Go(func() {
			second, err := p.Acquire(context.Background(), 1)
			if assert.NoError(t, err) {
				second.Release()
			}
		})
		synctest.Wait()
		time.Sleep(50 * time.Millisecond)
		first.Release()
		wg.Wait()
		s := h.Snapshot()
		assert.Equal(t, uint64(2), s.Count)
		assert.Equal(t, uint64(1), s.Counts[0])
		assert.Equal(t, uint64(1), s.Counts[bucketOf(50*time.Millisecond)])
		assert.Equal(t, 50*time.Millisecond, s.Sum)
	})
}
