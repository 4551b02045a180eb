package permitstest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/permits/permitstest"
)

// fakeT records what Track reports, and runs cleanups when told.
type fakeT struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (f *fakeT) Helper()           {}
func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Error(args ...any) {
	f.mu.Lock()
	f.errs = append(f.errs, fmt.Sprint(args...))
	f.mu.Unlock()
}
func (f *fakeT) Errorf(s string, args ...any) { f.Error(fmt.Sprintf(s, args...)) }

func (f *fakeT) end() string {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
	return strings.Join(f.errs, "\n")
}

func newPool(t *testing.T, size int64) *actor.Pool {
	p, err := actor.NewPool(size)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// leakyWorker forgets to release its permit.
func leakyWorker(lim permits.Limiter) {
	_, _ = lim.Acquire(context.Background(), 2)
}

func TestTrackListsEveryHeldPermitWithItsStack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pool := newPool(t, 10)
		ft := &fakeT{}
		lim := permitstest.Track(ft, pool, permitstest.WithStacks(), permitstest.WithName("the pool"))
		ok, err := lim.Acquire(context.Background(), 1)
		require.NoError(t, err)
		leakyWorker(lim)
		leakyWorker(lim)
		ok.Release()
		report := ft.end()
		assert.Contains(t, report, "2 permit(s) from the pool still held")
		assert.Contains(t, report, "permit #2, cost 2, acquired at:")
		assert.Contains(t, report, "permit #3, cost 2, acquired at:")
		assert.Equal(t, 2, strings.Count(report, "permitstest_test.leakyWorker"), report)
		assert.Contains(t, report, "permitstest_test.go:")
		assert.NotContains(t, report, "WithStacks() shows")
	})
}

func TestTrackWithoutStacksRecordsNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pool := newPool(t, 10)
		ft := &fakeT{}
		lim := permitstest.Track(ft, pool)
		leakyWorker(lim)
		report := ft.end()
		assert.Contains(t, report, "1 permit(s) from *actor.Pool still held")
		assert.Contains(t, report, "permit #1, cost 2\n")
		assert.NotContains(t, report, "leakyWorker")
		assert.Contains(t, report, "permitstest.WithStacks() shows where")
	})
}

func TestTrackPassesWhenEverythingIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pool := newPool(t, 3)
		ft := &fakeT{}
		lim := permitstest.Track(ft, pool, permitstest.WithStacks())
		var wg sync.WaitGroup
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := permits.Do(context.Background(), lim, 1, func(context.Context) error {
					time.Sleep(time.Millisecond)
					return nil
				})
				assert.NoError(t, err)
			}()
		}
		wg.Wait()
		p, err := lim.TryAcquire(3)
		require.NoError(t, err)
		p.Release()
		p.Release() // twice: still one release of the pool's permit
		assert.Empty(t, ft.end())
		assert.Equal(t, int64(0), pool.Stats().InFlight)
	})
}

func TestTrackCountsRatePermitsToo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := algorithms.NewGCRA(algorithms.PerSecond(10), 5)
		require.NoError(t, err)
		rate := actor.MustNew(g)
		defer rate.Close()
		ft := &fakeT{}
		lim := permitstest.Track(ft, rate)
		_, err = lim.Acquire(context.Background(), 1)
		require.NoError(t, err)
		assert.Contains(t, ft.end(), "1 permit(s) from *actor.Limiter")
	})
}

func TestTrackKeepsRefundsWorkingInsideAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rate := func(burst int64) *actor.Limiter {
			g, err := algorithms.NewGCRA(algorithms.PerSecond(10), burst)
			require.NoError(t, err)
			l := actor.MustNew(g)
			t.Cleanup(func() { l.Close() })
			return l
		}
		wide, narrow := rate(2), rate(1)
		ft := &fakeT{}
		tracked := permitstest.Track(ft, wide)
		_, isRefunder := tracked.(permits.Refunder)
		require.True(t, isRefunder)
		_, poolIsRefunder := permitstest.Track(ft, newPool(t, 1)).(permits.Refunder)
		assert.False(t, poolIsRefunder, "a tracked pool must stay a pool for All")

		// The tracked rate grants 2, the narrow one refuses 2: the tracked
		// grant is refunded through the wrapper, and is not a leak.
		_, err := permits.All(tracked, narrow).Acquire(context.Background(), 2)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
		p, err := wide.TryAcquire(2)
		assert.NoError(t, err, "refunded through the wrapper")
		p.Release()
		assert.Empty(t, ft.end())
	})
}

// TestTrackKeepsSettlingWorkingInsideAll: a tracked rate limiter inside All
// settles through the wrapper; it used to be only a Refunder, so All's
// settle skipped it silently.
func TestTrackKeepsSettlingWorkingInsideAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := algorithms.NewGCRA(algorithms.PerSecond(10), 10)
		require.NoError(t, err)
		l := actor.MustNew(g)
		defer l.Close()
		ft := &fakeT{}
		tracked := permitstest.Track(ft, l)
		_, isSettler := tracked.(permits.Settler)
		require.True(t, isSettler)

		api := permits.All(tracked)
		p, err := api.Acquire(context.Background(), 10)
		require.NoError(t, err)
		require.NoError(t, permits.Settle(p, 4), "settled through the wrapper")
		p.Release()
		q, err := l.TryAcquire(6)
		assert.NoError(t, err, "the 6 units not used came back")
		q.Release()
		assert.Empty(t, ft.end(), "a settled and released permit is no leak")
	})
}
