package keyed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// t0 is where a synctest bubble's clock starts.
var t0 = time.Unix(946684800, 0) // 2000-01-01 UTC, in the local zone as time.Now is

func gcraPer[K comparable](rate algorithms.Rate, burst int64) func(K) (algorithms.Algorithm, error) {
	return func(K) (algorithms.Algorithm, error) { return algorithms.NewGCRA(rate, burst) }
}

func newLimiter[K comparable](t *testing.T, newAlg func(K) (algorithms.Algorithm, error), opts ...keyed.Option) *keyed.Limiter[K] {
	t.Helper()
	l, err := keyed.New(newAlg, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// grants records when and in which order Acquire calls returned.
type grants struct {
	mu    sync.Mutex
	order []int
	at    map[int]time.Time
	errs  map[int]error
}

func newGrants() *grants { return &grants{at: map[int]time.Time{}, errs: map[int]error{}} }

func (g *grants) record(id int, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.errs[id] = err
		return
	}
	g.order = append(g.order, id)
	g.at[id] = time.Now()
}

func (g *grants) granted() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.order)
}

// queue starts one Acquire per cost on key, in order, each at the owner
// before the next starts.
func queue[K comparable](wg *sync.WaitGroup, l *keyed.Limiter[K], key K, g *grants, ids []int, ctxs []context.Context, costs ...int64) {
	for i, c := range costs {
		ctx := context.Background()
		if ctxs != nil && ctxs[i] != nil {
			ctx = ctxs[i]
		}
		id := ids[i]
		wg.Go(func() {
			_, err := l.Acquire(ctx, key, c)
			g.record(id, err)
		})
		synctest.Wait()
	}
}

func seq(from, n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = from + i
	}
	return ids
}

func TestKeysHaveTheirOwnLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerMinute(2), 2))
		for _, key := range []string{"alice", "bob"} {
			for range 2 {
				_, err := l.TryAcquire(key, 1)
				require.NoError(t, err, key)
			}
			_, err := l.TryAcquire(key, 1)
			require.ErrorIs(t, err, permits.ErrRateLimited, key)
			wait, _ := permits.RetryAfter(err)
			assert.Equal(t, 30*time.Second, wait, "exact RetryAfter for %s", key)
		}
		assert.Equal(t, keyed.Stats{Stats: permits.Stats{Granted: 4, Rejected: 2}, Keys: 2}, l.Stats())
	})
}

func TestFIFOPerKeyAndKeysDoNotWaitForEachOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, func(string) (algorithms.Algorithm, error) {
			return algorithms.NewTokenBucket(algorithms.PerSecond(1), 10)
		})
		_, err := l.TryAcquire("a", 10) // empty a's bucket
		require.NoError(t, err)
		g := newGrants()
		var wg sync.WaitGroup
		queue(&wg, l, "a", g, seq(0, 3), nil, 5, 1, 1)
		assert.Equal(t, 3, l.Stats().Waiting)

		// b is not behind a's queue.
		_, err = l.Acquire(context.Background(), "b", 10)
		require.NoError(t, err)
		_, err = l.TryAcquire("a", 1)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "TryAcquire must fail while anyone waits on the key")

		time.Sleep(time.Second) // one token back: the small waiters must not pass the head
		synctest.Wait()
		assert.Empty(t, g.granted())
		wg.Wait()
		assert.Equal(t, []int{0, 1, 2}, g.order)
		assert.Equal(t, t0.Add(5*time.Second), g.at[0])
		assert.Equal(t, t0.Add(6*time.Second), g.at[1])
		assert.Equal(t, t0.Add(7*time.Second), g.at[2])
	})
}

func TestExactPacingPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[int](algorithms.PerSecond(10), 1))
		g := newGrants()
		var wg sync.WaitGroup
		for key := range 3 {
			costs := make([]int64, 10)
			for i := range costs {
				costs[i] = 1
			}
			queue(&wg, l, key, g, seq(key*100, 10), nil, costs...)
		}
		wg.Wait()
		for key := range 3 {
			for k := range 10 {
				assert.Equal(t, t0.Add(time.Duration(k)*100*time.Millisecond), g.at[key*100+k], "key %d waiter %d", key, k)
			}
		}
	})
}

func TestCancellationAnywhereGivesCapacityBack(t *testing.T) {
	for _, pos := range []int{0, 2, 4} {
		synctest.Test(t, func(t *testing.T) {
			l := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 1))
			_, err := l.TryAcquire("k", 1)
			require.NoError(t, err)
			ctxs := make([]context.Context, 5)
			ctx, cancel := context.WithCancel(context.Background())
			ctxs[pos] = ctx
			g := newGrants()
			var wg sync.WaitGroup
			queue(&wg, l, "k", g, seq(0, 5), ctxs, 1, 1, 1, 1, 1)
			cancel()
			synctest.Wait()
			assert.ErrorIs(t, g.errs[pos], context.Canceled)
			assert.Equal(t, uint64(1), l.Stats().Canceled)
			assert.Equal(t, 4, l.Stats().Waiting)
			wg.Wait()
			require.Len(t, g.order, 4)
			for k, id := range g.order {
				assert.NotEqual(t, pos, id)
				assert.Equal(t, t0.Add(time.Duration(k+1)*100*time.Millisecond), g.at[id], "grant %d", k)
			}
		})
	}
}

func TestDeadlineBeforeThePredictedGrantFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 1))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		var wg sync.WaitGroup
		g := newGrants()
		queue(&wg, l, "k", g, seq(0, 2), nil, 1, 1) // granted at 100ms and 200ms
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		_, err = l.Acquire(ctx, "k", 1) // would be granted at 300ms
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		wait, _ := permits.RetryAfter(err)
		assert.Equal(t, 300*time.Millisecond, wait)
		assert.Equal(t, t0, time.Now(), "refused at once")
		// A deadline that the grant meets waits.
		ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel2()
		_, err = l.Acquire(ctx2, "k", 1)
		require.NoError(t, err)
		assert.Equal(t, t0.Add(300*time.Millisecond), time.Now())
		wg.Wait()
	})
}

func TestMaxWaitAndMaxQueuePerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 1), keyed.WithMaxWait(150*time.Millisecond), keyed.WithMaxQueue(5))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		var wg sync.WaitGroup
		g := newGrants()
		queue(&wg, l, "k", g, seq(0, 1), nil, 1)         // 100ms
		_, err = l.Acquire(context.Background(), "k", 1) // 200ms: beyond max wait
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
		wait, _ := permits.RetryAfter(err)
		assert.Equal(t, 200*time.Millisecond, wait)
		_, err = l.Acquire(context.Background(), "other", 1)
		require.NoError(t, err, "another key is not behind k")
		wg.Wait()

		l2 := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 1), keyed.WithMaxQueue(2))
		_, err = l2.TryAcquire("k", 1)
		require.NoError(t, err)
		queue(&wg, l2, "k", g, seq(10, 2), nil, 1, 1)
		_, err = l2.Acquire(context.Background(), "k", 1)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "the key's queue is full")
		wg.Wait()
	})
}

func TestCloseFailsEveryWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := keyed.New(gcraPer[int](algorithms.PerHour(1), 1), keyed.WithShards(2))
		require.NoError(t, err)
		var wg sync.WaitGroup
		g := newGrants()
		for key := range 4 {
			_, err := l.TryAcquire(key, 1)
			require.NoError(t, err)
			queue(&wg, l, key, g, seq(key*10, 2), nil, 1, 1)
		}
		assert.Equal(t, 8, l.Stats().Waiting)
		require.NoError(t, l.Close())
		wg.Wait()
		assert.Len(t, g.errs, 8)
		for id, err := range g.errs {
			assert.ErrorIs(t, err, permits.ErrClosed, "waiter %d", id)
		}
		_, err = l.TryAcquire(1, 1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		_, err = l.Acquire(context.Background(), 1, 1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		require.NoError(t, l.Close(), "idempotent")
		assert.Equal(t, 0, l.Stats().Waiting)
	})
}

func TestInvalidInput(t *testing.T) {
	_, err := keyed.New[string](nil)
	assert.ErrorIs(t, err, permits.ErrInvalidConfig)
	for _, o := range []keyed.Option{keyed.WithShards(-1), keyed.WithShards(5000), keyed.WithMaxKeys(-1)} {
		_, err := keyed.New(gcraPer[string](algorithms.PerSecond(1), 1), o)
		assert.ErrorIs(t, err, permits.ErrInvalidConfig)
	}
	l := newLimiter(t, gcraPer[string](algorithms.PerSecond(1), 3), nil)
	_, err = l.TryAcquire("k", 0)
	assert.ErrorIs(t, err, permits.ErrInvalidCost)
	_, err = l.Acquire(context.Background(), "k", 4)
	assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = l.Acquire(ctx, "k", 1)
	assert.ErrorIs(t, err, context.Canceled)

	boom := errors.New("no such user")
	bad := newLimiter(t, func(k string) (algorithms.Algorithm, error) {
		if k == "nil" {
			return nil, nil
		}
		return nil, boom
	})
	_, err = bad.TryAcquire("x", 1)
	assert.ErrorIs(t, err, boom)
	var ae *keyed.AlgorithmError
	assert.ErrorAs(t, err, &ae)
	_, err = bad.Acquire(context.Background(), "nil", 1)
	assert.ErrorAs(t, err, &ae)
	assert.Equal(t, 0, bad.Stats().Keys)
}

func TestQuotaWithEachDecision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, gcraPer[string](algorithms.PerMinute(100), 100))
		_, q, err := l.TryAcquireQuota("k", 50)
		require.NoError(t, err)
		assert.Equal(t, permits.Quota{Limit: 100, Remaining: 50, Reset: 30 * time.Second, Window: time.Minute}, q)
		_, q, err = l.TryAcquireQuota("k", 60)
		require.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Equal(t, permits.Quota{Limit: 100, Remaining: 50, Reset: 30 * time.Second, RetryAfter: 6 * time.Second, Window: time.Minute}, q)

		// Waiting: the quota as of the grant, 6s later.
		_, q, err = l.AcquireQuota(context.Background(), "k", 60)
		require.NoError(t, err)
		assert.Equal(t, t0.Add(6*time.Second), time.Now())
		assert.Equal(t, permits.Quota{Limit: 100, Remaining: 0, Reset: time.Minute, Window: time.Minute}, q)

		// Behind a waiter: refused with what the owner published.
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = l.Acquire(context.Background(), "k", 10) }) // at 12s
		synctest.Wait()
		_, q, err = l.TryAcquireQuota("k", 1)
		require.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Equal(t, int64(0), q.Remaining)
		assert.Equal(t, 6*time.Second, q.RetryAfter)
		wg.Wait()
	})
}

func TestAlgorithmsWithoutALockFreeFormGoThroughTheOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, func(string) (algorithms.Algorithm, error) {
			return algorithms.NewSlidingWindow(algorithms.PerSecond(2))
		})
		for range 2 {
			_, q, err := l.TryAcquireQuota("k", 1)
			require.NoError(t, err)
			assert.Equal(t, int64(2), q.Limit)
		}
		_, q, err := l.TryAcquireQuota("k", 1)
		require.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Equal(t, time.Second, q.RetryAfter)
		assert.Equal(t, int64(0), q.Remaining)
		_, err = l.Acquire(context.Background(), "k", 2)
		require.NoError(t, err)
		assert.Equal(t, t0.Add(time.Second), time.Now())
	})
}

func ExampleLimiter() {
	// 100 requests per minute per user, bursts of up to 100.
	l, err := keyed.New(func(user string) (algorithms.Algorithm, error) {
		return algorithms.NewGCRA(algorithms.PerMinute(100), 100)
	})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	_, q, err := l.TryAcquireQuota("alice", 60)
	fmt.Println(err, q.Remaining, "left; full again in", q.Reset)
	_, q, err = l.TryAcquireQuota("alice", 60)
	fmt.Println(errors.Is(err, permits.ErrRateLimited), "retry after", q.RetryAfter.Round(time.Second))
	_, err = l.TryAcquire("bob", 100)
	fmt.Println("bob:", err)
	// Output:
	// <nil> 40 left; full again in 36s
	// true retry after 12s
	// bob: <nil>
}

// NewGCRA is New with a GCRA of one rate and burst for every key, and
// refuses a bad rate or burst when it is made, not on a key's first
// request.
func TestNewGCRAGivesEveryKeyItsOwnGCRA(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := keyed.NewGCRA[string](algorithms.PerSecond(1), 2)
		require.NoError(t, err)
		defer l.Close()
		for _, key := range []string{"a", "b"} {
			for range 2 {
				_, err := l.TryAcquire(key, 1)
				require.NoError(t, err, key)
			}
			_, err := l.TryAcquire(key, 1)
			require.ErrorIs(t, err, permits.ErrRateLimited, "%s: its burst of 2 is spent", key)
		}
		_, err = l.TryAcquire("a", 3)
		require.ErrorIs(t, err, permits.ErrCostExceedsCapacity)

		for name, bad := range map[string]func() error{
			"zero rate":  func() error { _, err := keyed.NewGCRA[string](algorithms.PerSecond(0), 1); return err },
			"zero burst": func() error { _, err := keyed.NewGCRA[string](algorithms.PerSecond(1), 0); return err },
			"invalid option": func() error {
				_, err := keyed.NewGCRA[string](algorithms.PerSecond(1), 1, keyed.WithShards(-1))
				return err
			},
		} {
			assert.ErrorIs(t, bad(), permits.ErrInvalidConfig, name)
		}
	})
}

func ExampleNewGCRA() {
	// 100 requests per minute per user, bursts of up to 100, as
	// redislimit.NewKeyed(client, "rl:", algorithms.PerMinute(100), 100)
	// would share it across processes.
	l, err := keyed.NewGCRA[string](algorithms.PerMinute(100), 100)
	if err != nil {
		panic(err)
	}
	defer l.Close()
	_, q, err := l.TryAcquireQuota("alice", 60)
	fmt.Println(err, q.Remaining, "left")
	// Output:
	// <nil> 40 left
}
