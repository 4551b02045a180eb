package actor_test

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
)

// mutexGCRA is the baseline the fast path is measured against: the textbook
// GCRA behind a sync.Mutex, as most Go rate limiters are written.
type mutexGCRA struct {
	mu    sync.Mutex
	tat   time.Time
	every time.Duration
	tau   time.Duration
}

func (g *mutexGCRA) allow(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	tat := g.tat
	if tat.Before(now) {
		tat = now
	}
	next := tat.Add(g.every)
	if next.Sub(now) > g.tau {
		return false
	}
	g.tat = next
	return true
}

// A rate high enough that most decisions allow: the common case.
var fastRate = algorithms.PerSecond(1_000_000_000)

func BenchmarkTryAcquireFastPath(b *testing.B) {
	g, _ := algorithms.NewGCRA(fastRate, 1000)
	l := actor.New(g)
	defer l.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Allow()
		}
	})
}

func BenchmarkMutexGCRABaseline(b *testing.B) {
	g := &mutexGCRA{every: time.Nanosecond, tau: 1000 * time.Nanosecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			g.allow(time.Now())
		}
	})
}

// ownerOnly is an algorithm with no lock-free form that admits everything
// a benchmark asks: a sliding window of 2^40 units per microsecond, so that
// every Acquire is a message and a reply, and the window keeps few entries.
func ownerOnly() algorithms.Algorithm {
	w, _ := algorithms.NewSlidingWindow(algorithms.Rate{Count: 1 << 40, Per: time.Microsecond})
	return w
}

// BenchmarkAcquireThroughOwner measures a round trip through the owner's
// inbox, with four goroutines per core calling.
func BenchmarkAcquireThroughOwner(b *testing.B) {
	l := actor.New(ownerOnly())
	defer l.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := l.Acquire(ctx, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkAcquireThroughOwnerSerial(b *testing.B) {
	l := actor.New(ownerOnly())
	defer l.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := l.Acquire(ctx, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHeapPerWaiter reports the heap a blocked Acquire holds beyond its
// goroutine: n goroutines blocked in Acquire, against n blocked in a select
// on a channel and a context, which is what any waiting costs.
func BenchmarkHeapPerWaiter(b *testing.B) {
	const n = 10000
	heapWith := func(start func(ctx context.Context, ready *sync.WaitGroup), settle func()) float64 {
		ctx, cancel := context.WithCancel(context.Background())
		var ready, done sync.WaitGroup
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := 0; i < n; i++ {
			ready.Add(1)
			done.Add(1)
			go func() { defer done.Done(); start(ctx, &ready) }()
		}
		ready.Wait()
		settle()
		runtime.GC()
		runtime.ReadMemStats(&after)
		cancel()
		done.Wait()
		return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	}
	for i := 0; i < b.N; i++ {
		never := make(chan struct{})
		blocked := func(ctx context.Context, ready *sync.WaitGroup) {
			ready.Done()
			select {
			case <-never:
			case <-ctx.Done():
			}
		}
		// The first round pays for goroutine descriptors the runtime then
		// keeps for reuse; measure the second.
		heapWith(blocked, func() {})
		base := heapWith(blocked, func() {})
		g, _ := algorithms.NewGCRA(algorithms.Every(time.Hour), 1)
		l := actor.New(g)
		l.Allow()
		waiting := heapWith(func(ctx context.Context, ready *sync.WaitGroup) {
			// Counted ready before it is queued; the GC below runs once
			// every waiter is queued (Stats says so).
			ready.Done()
			l.Acquire(ctx, 1)
		}, func() {
			for l.Stats().Waiting < n {
				runtime.Gosched()
			}
		})
		l.Close()
		b.ReportMetric(waiting-base, "B/waiter")
	}
}

// BenchmarkIdleLimiterBytes reports the heap an idle Limiter holds beyond
// its goroutine's stack (issue 9: at most 4 KB; it was about 16 KB while a
// 256-slot mailbox was part of every limiter), and the same for a Pool.
func BenchmarkIdleLimiterBytes(b *testing.B) {
	const n = 1000
	heapOf := func(start func() func()) float64 {
		closers := make([]func(), 0, n)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			closers = append(closers, start())
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		for _, c := range closers {
			c()
		}
		return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	}
	for range b.N {
		limiter := heapOf(func() func() {
			g, _ := algorithms.NewGCRA(algorithms.PerSecond(30), 1)
			l := actor.New(g)
			l.Allow() // the algorithm has its origin, as in use
			return func() { l.Close() }
		})
		pool := heapOf(func() func() {
			p, _ := actor.NewPool(20)
			pm, _ := p.TryAcquire(1)
			pm.Release()
			return func() { p.Close() }
		})
		b.ReportMetric(limiter, "B/limiter")
		b.ReportMetric(pool, "B/pool")
	}
}

// BenchmarkDeliveryJitter measures, on the real clock, how late grants reach
// their callers after their scheduled instant (Grant.At): timer lateness,
// the owner's wake-up, the caller's. 16 waiters at 200/s with burst 1 (a
// grant every 5ms, always someone waiting); each iteration is one grant.
// The p50, p99 and max lateness are what a client should keep below an
// upstream's quota: a request the upstream sees late may land in its next
// window (docs/testing.md, "Margins").
func BenchmarkDeliveryJitter(b *testing.B) {
	g, _ := algorithms.NewGCRA(algorithms.PerSecond(200), 1)
	l := actor.New(g)
	defer l.Close()
	var mu sync.Mutex
	var late []time.Duration
	var wg sync.WaitGroup
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				gr, err := l.AcquireGrant(context.Background(), 1)
				if err != nil {
					b.Error(err)
					return
				}
				d := time.Since(gr.At)
				mu.Lock()
				late = append(late, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(late)
	if n := len(late); n > 0 {
		b.ReportMetric(float64(late[n/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(late[n*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(late[n-1].Microseconds()), "max-µs")
	}
}
