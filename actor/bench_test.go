package actor_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
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
	l := actor.MustNew(g)
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
	l := actor.MustNew(ownerOnly())
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
	l := actor.MustNew(ownerOnly())
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
		l := actor.MustNew(g)
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
			l := actor.MustNew(g)
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
	l := actor.MustNew(g)
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

// BenchmarkLaneGrant is issue 14's cost of a grant with many busy lanes: 2000
// goroutines, the same number for every count of lanes, spread over the
// lanes and each asking again as soon as it is granted, at a rate (10^7/s)
// the owner cannot keep up with, so that every grant is one from the queue
// and the owner is the bottleneck. ns/op is the wall time per grant: the
// owner's decision, the fair order, the reply and the caller's wake-up.
// "fifo" is the same load on a limiter without lanes.
func BenchmarkLaneGrant(b *testing.B) {
	const callers = 2000
	for _, lanes := range []int{0, 1, 10, 100, 1000} {
		name := fmt.Sprintf("lanes=%d", lanes)
		if lanes == 0 {
			name = "fifo"
		}
		b.Run(name, func(b *testing.B) {
			g, _ := algorithms.NewGCRA(algorithms.PerSecond(10_000_000), 1)
			l := actor.MustNew(g)
			defer l.Close()
			acquire := make([]func(context.Context, int64) (permits.Permit, error), callers)
			for i := range acquire {
				acquire[i] = l.Acquire
				if lanes > 0 {
					ln, err := l.Lane(fmt.Sprint("tenant-", i%lanes), 1+i%lanes%4)
					if err != nil {
						b.Fatal(err)
					}
					acquire[i] = ln.Acquire
				}
			}
			var left atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			b.ResetTimer()
			for i := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for left.Add(-1) >= 0 {
						if _, err := acquire[i](context.Background(), 1); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// BenchmarkLaneBytes reports the heap a lane holds: a new one (its handle
// and its entry by name), and one that was busy (its waiters predicted
// against deadlines, so with a shadow of the algorithm) and is idle again,
// which must hold no more.
func BenchmarkLaneBytes(b *testing.B) {
	const n = 10_000
	for range b.N {
		g, _ := algorithms.NewGCRA(algorithms.PerSecond(1_000_000), 1)
		l := actor.MustNew(g)
		if _, err := l.Lane("warm", 1); err != nil { // the first lane starts the fair order
			b.Fatal(err)
		}
		// The runtime keeps the descriptors of n goroutines for reuse once
		// it has had them: pay for them before measuring.
		var warm sync.WaitGroup
		hold := make(chan struct{})
		for range n {
			warm.Add(1)
			go func() { defer warm.Done(); <-hold }()
		}
		close(hold)
		warm.Wait()
		var before, fresh, idle runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		lanes := make([]*actor.Lane, n)
		for i := range lanes {
			lanes[i], _ = l.Lane(fmt.Sprint("tenant-", i), 1+i%5)
		}
		runtime.GC()
		runtime.ReadMemStats(&fresh)
		l.Allow()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var wg sync.WaitGroup
		for _, ln := range lanes {
			wg.Add(1)
			go func() { defer wg.Done(); _ = ln.Wait(ctx) }()
		}
		wg.Wait()
		cancel()
		runtime.GC()
		runtime.GC() // twice: the calls the waiters used leave sync.Pool's victim cache
		runtime.ReadMemStats(&idle)
		b.ReportMetric(float64(fresh.HeapAlloc-before.HeapAlloc)/n, "B/lane")
		b.ReportMetric(float64(int64(idle.HeapAlloc)-int64(before.HeapAlloc))/n, "B/lane-after-busy")
		runtime.KeepAlive(lanes)
		l.Close()
	}
}

// BenchmarkAcquireObserved is Acquire on the fast path without an
// observer and with a permits.WaitHistogram: the seam's cost per granted
// Acquire (docs/observability.md).
func BenchmarkAcquireObserved(b *testing.B) {
	// told is a WaitHistogram seen as a plain Observer: told of every
	// Acquire granted at once, as every observer was before
	// permits.AtOnceObserver.
	type told struct{ permits.Observer }
	for _, name := range []string{"none", "histogram", "told"} {
		b.Run(name, func(b *testing.B) {
			g, _ := algorithms.NewGCRA(fastRate, 1000)
			var opts []actor.Option
			switch name {
			case "histogram":
				opts = append(opts, actor.WithObserver(new(permits.WaitHistogram)))
			case "told":
				opts = append(opts, actor.WithObserver(told{new(permits.WaitHistogram)}))
			}
			l := actor.MustNew(g, opts...)
			defer l.Close()
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = l.Acquire(ctx, 1)
				}
			})
		})
	}
}
