package actor_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

func newPool(t testing.TB, size int64, opts ...actor.PoolOption) *actor.Pool {
	t.Helper()
	p, err := actor.NewPool(size, opts...)
	require.NoError(t, err)
	return p
}

// poolWaiters starts Acquire calls one at a time and records, in order, the
// ones that were granted; each has reached the owner before the next starts
// (synctest.Wait), so arrival order is start order.
type poolWaiters struct {
	t     *testing.T
	p     *actor.Pool
	wg    sync.WaitGroup
	mu    sync.Mutex
	order []int
	held  map[int]permits.Permit
	errs  map[int]error
}

func newPoolWaiters(t *testing.T, p *actor.Pool) *poolWaiters {
	return &poolWaiters{t: t, p: p, held: map[int]permits.Permit{}, errs: map[int]error{}}
}

func (w *poolWaiters) start(id int, ctx context.Context, cost int64) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		pm, err := w.p.Acquire(ctx, cost)
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			w.errs[id] = err
			return
		}
		w.order = append(w.order, id)
		w.held[id] = pm
	}()
	synctest.Wait()
}

// granted returns the ids granted so far, sorted. Waiters granted in one
// batch wake in any order, so the order they return in says nothing; the
// tests check FIFO by what has been granted at each step instead.
func (w *poolWaiters) granted() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(slices.Values(w.order))
}

// releaseAll releases every permit until none is held, granting the rest.
func (w *poolWaiters) releaseAll() {
	released := map[int]bool{}
	for {
		var ids []int
		for _, id := range w.granted() {
			if !released[id] {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return
		}
		for _, id := range ids {
			released[id] = true
			w.release(id)
		}
	}
}

func (w *poolWaiters) release(id int) {
	w.mu.Lock()
	pm, ok := w.held[id]
	w.mu.Unlock()
	require.True(w.t, ok, "waiter %d holds nothing", id)
	pm.Release()
	synctest.Wait()
}

func TestNewPoolValidatesSize(t *testing.T) {
	for _, size := range []int64{0, -1, 1 << 62} {
		_, err := actor.NewPool(size)
		assert.ErrorIs(t, err, permits.ErrInvalidConfig, "size %d", size)
	}
}

func TestPoolHoldsAtMostSizeUntilRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, 10)
		defer p.Close()
		a, err := p.Acquire(context.Background(), 6)
		require.NoError(t, err)
		b, err := p.TryAcquire(4)
		require.NoError(t, err)
		assert.Equal(t, int64(10), p.Stats().InFlight)

		_, err = p.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		_, ok := permits.RetryAfter(err)
		assert.False(t, ok, "a pool cannot say how long")

		a.Release()
		assert.Equal(t, int64(4), p.Stats().InFlight)
		a.Release() // a second Release is a no-op
		copyOfA := a
		copyOfA.Release() // and so is one of a copy
		assert.Equal(t, int64(4), p.Stats().InFlight)

		// The token a held is recycled; a's stale copies stay inert.
		c, err := p.TryAcquire(6)
		require.NoError(t, err)
		a.Release()
		assert.Equal(t, int64(10), p.Stats().InFlight)
		c.Release()
		b.Release()
		st := p.Stats()
		assert.Equal(t, actor.PoolStats{Stats: permits.Stats{Granted: 3, Rejected: 1}, Size: 10, InFlight: 0}, st)
	})
}

func TestPoolReleaseGrantsWaitersInFIFOOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, 10)
		defer p.Close()
		big, err := p.Acquire(context.Background(), 8)
		require.NoError(t, err)

		w := newPoolWaiters(t, p)
		w.start(0, context.Background(), 5) // does not fit: 2 free
		w.start(1, context.Background(), 1) // would fit, but must not pass 0
		w.start(2, context.Background(), 1)
		assert.Empty(t, w.granted(), "a small waiter passed a large head")
		assert.Equal(t, 3, p.Stats().Waiting)
		_, err = p.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "TryAcquire must fail while anyone waits")

		// The release is a message that makes the owner grant.
		big.Release()
		synctest.Wait()
		assert.Equal(t, []int{0, 1, 2}, w.granted())
		assert.Equal(t, int64(7), p.Stats().InFlight)
		assert.Equal(t, 0, p.Stats().Waiting)

		// The queue is empty: the fast path is open again.
		q, err := p.TryAcquire(3)
		require.NoError(t, err)
		q.Release()
		w.releaseAll()
		w.wg.Wait()
		assert.Equal(t, int64(0), p.Stats().InFlight)
	})
}

func TestPoolPartialReleasesGrantOnlyWhatFits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, 4)
		defer p.Close()
		w := newPoolWaiters(t, p)
		for id := range 4 {
			w.start(id, context.Background(), 1)
		}
		w.start(4, context.Background(), 2)
		w.start(5, context.Background(), 1)
		assert.Equal(t, []int{0, 1, 2, 3}, w.granted())
		w.release(0)
		assert.Equal(t, []int{0, 1, 2, 3}, w.granted(), "one free unit; the head needs two")
		w.release(1)
		assert.Equal(t, []int{0, 1, 2, 3, 4}, w.granted())
		w.release(2)
		assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, w.granted())
		for _, id := range []int{3, 4, 5} {
			w.release(id)
		}
		w.wg.Wait()
		assert.Equal(t, int64(0), p.Stats().InFlight)
	})
}

func TestPoolCancellationAnywhereGivesCapacityBack(t *testing.T) {
	for _, pos := range []int{0, 1, 2} { // head, middle, tail
		t.Run(fmt.Sprint("position ", pos), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPool(t, 4)
				defer p.Close()
				hold, err := p.Acquire(context.Background(), 2)
				require.NoError(t, err)
				w := newPoolWaiters(t, p)
				ctx, cancel := context.WithCancel(context.Background())
				costs := []int64{3, 2, 2} // the head does not fit
				for id, c := range costs {
					cctx := context.Background()
					if id == pos {
						cctx = ctx
					}
					w.start(id, cctx, c)
				}
				assert.Empty(t, w.granted())
				cancel()
				synctest.Wait()
				assert.ErrorIs(t, w.errs[pos], context.Canceled)
				assert.Equal(t, uint64(1), p.Stats().Canceled)
				if pos == 0 {
					// The head left: the next one fits in the two free units.
					assert.Equal(t, []int{1}, w.granted())
				} else {
					assert.Empty(t, w.granted())
				}
				hold.Release()
				synctest.Wait()
				w.releaseAll()
				w.wg.Wait()
				assert.Len(t, w.granted(), 2)
				assert.NotContains(t, w.granted(), pos)
				st := p.Stats()
				assert.Equal(t, int64(0), st.InFlight, "no capacity lost")
				assert.Equal(t, 0, st.Waiting)
			})
		})
	}
}

func TestPoolDeadlineWaitsUntilItPasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, 1)
		defer p.Close()
		hold, err := p.Acquire(context.Background(), 1)
		require.NoError(t, err)
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err = p.Acquire(ctx, 1)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, t0.Add(300*time.Millisecond), time.Now(), "a pool cannot predict, so it waits")
		assert.Equal(t, 0, p.Stats().Waiting)
		hold.Release()
		assert.Equal(t, int64(0), p.Stats().InFlight)
	})
}

func TestPoolFailsFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, 4)
		defer p.Close()
		hold, err := p.Acquire(context.Background(), 4)
		require.NoError(t, err)
		defer hold.Release()

		_, err = p.Acquire(context.Background(), 5)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity, "never queued, even behind a full pool")
		_, err = p.TryAcquire(5)
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
		for _, c := range []int64{0, -3} {
			_, err = p.Acquire(context.Background(), c)
			assert.ErrorIs(t, err, permits.ErrInvalidCost)
			_, err = p.TryAcquire(c)
			assert.ErrorIs(t, err, permits.ErrInvalidCost)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		hold.Release()
		_, err = p.Acquire(ctx, 1)
		assert.ErrorIs(t, err, context.Canceled, "a done context fails even with capacity free")
		st := p.Stats()
		assert.Equal(t, 0, st.Waiting)
		assert.Equal(t, int64(0), st.InFlight)
	})
}

func TestPoolMaxQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, 1, actor.WithMaxQueue(1), actor.WithName("bounded"))
		defer p.Close()
		hold, err := p.Acquire(context.Background(), 1)
		require.NoError(t, err)
		w := newPoolWaiters(t, p)
		w.start(0, context.Background(), 1)
		_, err = p.Acquire(context.Background(), 1)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "queue full")
		hold.Release()
		synctest.Wait()
		w.release(0)
		w.wg.Wait()
		assert.Equal(t, uint64(1), p.Stats().Rejected)
	})
}

func TestPoolCloseFailsWaitersAndLaterCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, 2)
		hold, err := p.Acquire(context.Background(), 2)
		require.NoError(t, err)
		w := newPoolWaiters(t, p)
		w.start(0, context.Background(), 1)
		w.start(1, context.Background(), 2)
		require.NoError(t, p.Close())
		w.wg.Wait()
		assert.ErrorIs(t, w.errs[0], permits.ErrClosed)
		assert.ErrorIs(t, w.errs[1], permits.ErrClosed)
		_, err = p.Acquire(context.Background(), 1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		_, err = p.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		// A permit held across Close releases without blocking on the owner
		// that is gone, though the gate was closed when it released.
		hold.Release()
		assert.Equal(t, int64(0), p.Stats().InFlight)
		assert.NoError(t, p.Close(), "idempotent")
	})
}

func TestPoolGrantRacingCancellation(t *testing.T) {
	// The release that grants the waiter and the waiter's deadline land in
	// the same instant. Either answer is correct; capacity is accounted
	// either way.
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, 1)
		defer p.Close()
		hold, err := p.Acquire(context.Background(), 1)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		var got permits.Permit
		var gotErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			got, gotErr = p.Acquire(ctx, 1)
		}()
		synctest.Wait()
		time.Sleep(100 * time.Millisecond)
		hold.Release()
		<-done
		if gotErr == nil {
			assert.Equal(t, int64(1), p.Stats().InFlight)
			got.Release()
		} else {
			assert.ErrorIs(t, gotErr, context.DeadlineExceeded)
		}
		assert.Equal(t, int64(0), p.Stats().InFlight)
	})
}

func TestPoolReleasePanicsOnlyWhenCalledWrongly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, 2)
		defer p.Close()
		pm, err := p.Acquire(context.Background(), 1)
		require.NoError(t, err)
		pm.Release()
		assert.Panics(t, func() { p.ReleasePermit(pm) }, "bypassing the token releases twice")
	})
}

func TestPoolConcurrentHoldersNeverExceedSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 5
		p := newPool(t, size)
		defer p.Close()
		var inUse, peak atomic.Int64
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cost := int64(i%3 + 1)
				pm, err := p.Acquire(context.Background(), cost)
				if !assert.NoError(t, err) {
					return
				}
				n := inUse.Add(cost)
				for {
					old := peak.Load()
					if n <= old || peak.CompareAndSwap(old, n) {
						break
					}
				}
				time.Sleep(time.Duration(i%4+1) * time.Millisecond)
				inUse.Add(-cost)
				pm.Release()
			}()
		}
		wg.Wait()
		assert.LessOrEqual(t, peak.Load(), int64(size))
		assert.Equal(t, int64(size), peak.Load(), "the pool was used to the full")
		assert.Equal(t, uint64(40), p.Stats().Granted)
		assert.Equal(t, int64(0), p.Stats().InFlight)
	})
}

// poolModel is the naive reference: a FIFO list and a count.
type poolModel struct {
	size     int64
	inFlight int64
	queue    []poolModelWaiter
	held     map[int]int64 // id -> cost
	granted  []int         // sorted
}

type poolModelWaiter struct {
	id   int
	cost int64
}

// grant grants heads in order while they fit.
func (m *poolModel) grant() {
	for len(m.queue) > 0 && m.inFlight+m.queue[0].cost <= m.size {
		h := m.queue[0]
		m.queue = m.queue[1:]
		m.inFlight += h.cost
		m.held[h.id] = h.cost
		m.granted = append(m.granted, h.id)
	}
	slices.Sort(m.granted)
}

func (m *poolModel) remove(id int) bool {
	for i, w := range m.queue {
		if w.id == id {
			m.queue = slices.Delete(m.queue, i, i+1)
			return true
		}
	}
	return false
}

// TestPoolPropertyAgainstModel drives a Pool and the model through the same
// random acquire / try / cancel / release sequences and then Close: the
// in-flight count never exceeds the size, grants come in the model's FIFO
// order, and no capacity is lost.
func TestPoolPropertyAgainstModel(t *testing.T) {
	for seed := range uint64(60) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { poolProperty(t, seed) })
		})
	}
}

func poolProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	size := 1 + rng.Int64N(8)
	p := newPool(t, size)
	m := &poolModel{size: size, held: map[int]int64{}}
	w := newPoolWaiters(t, p)
	cancels := map[int]context.CancelFunc{}
	next := 0
	for step := 0; step < 80; step++ {
		switch k := rng.IntN(10); {
		case k < 4: // a waiter arrives
			id, cost := next, 1+rng.Int64N(size)
			next++
			ctx, cancel := context.WithCancel(context.Background())
			cancels[id] = cancel
			m.queue = append(m.queue, poolModelWaiter{id, cost})
			m.grant()
			w.start(id, ctx, cost)
		case k < 5: // TryAcquire: succeeds only if nobody waits and it fits
			cost := 1 + rng.Int64N(size)
			pm, err := p.TryAcquire(cost)
			want := len(m.queue) == 0 && m.inFlight+cost <= size
			require.Equal(t, want, err == nil, "step %d: TryAcquire(%d) with %d in flight, %d waiting: %v",
				step, cost, m.inFlight, len(m.queue), err)
			if err == nil {
				pm.Release()
			}
		case k < 7: // a waiter gives up
			if len(m.queue) == 0 {
				continue
			}
			id := m.queue[rng.IntN(len(m.queue))].id
			m.remove(id)
			m.grant()
			cancels[id]()
			synctest.Wait()
		default: // a holder releases, sometimes twice
			ids := make([]int, 0, len(m.held))
			for id := range m.held {
				ids = append(ids, id)
			}
			if len(ids) == 0 {
				continue
			}
			slices.Sort(ids)
			id := ids[rng.IntN(len(ids))]
			m.inFlight -= m.held[id]
			delete(m.held, id)
			m.grant()
			w.release(id)
			if rng.IntN(4) == 0 {
				w.release(id)
			}
		}
		st := p.Stats()
		require.LessOrEqual(t, st.InFlight, size, "step %d", step)
		require.Equal(t, m.inFlight, st.InFlight, "step %d", step)
		require.Equal(t, len(m.queue), st.Waiting, "step %d", step)
		require.Equal(t, m.granted, w.granted(), "step %d: granted so far (FIFO)", step)
	}
	require.NoError(t, p.Close())
	w.wg.Wait()
	for _, mw := range m.queue {
		require.ErrorIs(t, w.errs[mw.id], permits.ErrClosed)
	}
	for id := range m.held {
		w.release(id)
	}
	for _, cancel := range cancels {
		cancel()
	}
	require.Equal(t, int64(0), p.Stats().InFlight, "capacity lost")
}

func BenchmarkPoolAcquireRelease(b *testing.B) {
	p := newPool(b, 1<<20)
	defer p.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		pm, err := p.Acquire(ctx, 1)
		if err != nil {
			b.Fatal(err)
		}
		pm.Release()
	}
}

// BenchmarkChanSemaphoreBaseline is the trivial baseline: a buffered channel
// used as a semaphore (weight 1 only).
func BenchmarkChanSemaphoreBaseline(b *testing.B) {
	sem := make(chan struct{}, 1<<20)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		}
		<-sem
	}
}

func BenchmarkPoolAcquireReleaseParallel(b *testing.B) {
	p := newPool(b, 1<<20)
	defer p.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			pm, err := p.Acquire(ctx, 1)
			if err != nil {
				b.Error(err)
				return
			}
			pm.Release()
		}
	})
}

// BenchmarkPoolContended keeps the pool full, so that most Acquires queue
// and most Releases are messages that wake the owner.
func BenchmarkPoolContended(b *testing.B) {
	p := newPool(b, 4)
	defer p.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			pm, err := p.Acquire(ctx, 1)
			if err != nil {
				b.Error(err)
				return
			}
			pm.Release()
		}
	})
}
