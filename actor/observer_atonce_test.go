package actor_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/permits"
)

// zeroWaits counts the Waited calls of a plain Observer.
type zeroWaits struct{ n atomic.Int64 }

func (o *zeroWaits) Waited(d time.Duration) {
	if d == 0 {
		o.n.Add(1)
	}
}

// An observer that counts the Acquires granted at once itself is not told
// of each: the limiter counts them on the fast path, in its Stats too, and
// calls Waited only for the Acquire its owner granted; it stops the count
// once, however often it is closed.
func TestAnAtOnceObserverReadsTheFastPathsGrantsInsteadOfBeingTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := new(testutil.AtOnceObserver)
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 3), actor.WithObserver(o))
		for range 3 {
			_, err := l.Acquire(context.Background(), 1)
			require.NoError(t, err)
		}
		_, err := l.Acquire(context.Background(), 1) // waits 100ms
		require.NoError(t, err)
		_, err = l.TryAcquire(1)
		require.Error(t, err)
		require.NotNil(t, o.Read, "the limiter handed its count over")
		assert.Equal(t, uint64(3), o.Read())
		assert.Equal(t, int64(1), o.Waits.Load(), "told only of the wait")
		assert.Equal(t, uint64(4), l.Stats().Granted)
		l.Close()
		l.Close()
		assert.Equal(t, int32(1), o.Stops.Load())
	})
}

// A plain Observer is still told of every Acquire granted at once, by a
// Limiter and a Pool.
func TestAPlainObserverIsToldOfEachAcquireGrantedAtOnce(t *testing.T) {
	o := new(zeroWaits)
	l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 2), actor.WithObserver(o))
	defer l.Close()
	p, err := actor.NewPool(2, nil, actor.WithObserver(o))
	require.NoError(t, err)
	defer p.Close()
	for range 2 {
		_, err := l.Acquire(context.Background(), 1)
		require.NoError(t, err)
		_, err = p.Acquire(context.Background(), 1)
		require.NoError(t, err)
	}
	assert.Equal(t, int64(4), o.n.Load())
}

// A WaitHistogram shared by a Limiter and a Pool counts the grants each
// made at once, from many goroutines, and keeps them once both are closed.
func TestAWaitHistogramKeepsTheAtOnceGrantsOfClosedLimiters(t *testing.T) {
	var h permits.WaitHistogram
	l := actor.MustNew(gcra(t, algorithms.PerSecond(1e6), 1e6), actor.WithObserver(&h))
	p, err := actor.NewPool(1e6, nil, actor.WithObserver(&h))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, err := l.Acquire(context.Background(), 1)
				assert.NoError(t, err)
				_, err = p.Acquire(context.Background(), 1)
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	granted := l.Stats().Granted + p.Stats().Granted
	assert.Equal(t, uint64(1600), granted)
	l.Close()
	p.Close()
	s := h.Snapshot()
	assert.Equal(t, granted, s.Count, "every grant is a wait counted once")
}
