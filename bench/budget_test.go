package bench_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/budget"
)

// The retry budget against the design it replaces: a budget that keeps one
// timestamp per deposit and per withdrawal and trims them on every call
// (Finagle-style arithmetic, the old sluice/Python implementation). Goals:
// sluice ≤ 512 B per budget at any traffic, O(1) and 0 allocs per call.
//
//	go test -run '^$' -bench Budget -benchmem -count 5 ./...

// naiveBudget keeps every event's instant, in nanoseconds on a clock the
// caller supplies, in two queues it trims from the front on every call. Safe
// for concurrent use.
type naiveBudget struct {
	mu                    sync.Mutex
	ttl                   int64
	reserve, percent      float64
	deposits, withdrawals []int64
}

func newNaiveBudget() *naiveBudget {
	return &naiveBudget{ttl: int64(10 * time.Second), reserve: 10 * 10, percent: 0.2}
}

func (b *naiveBudget) trim(now int64) {
	for len(b.deposits) > 0 && b.deposits[0] <= now-b.ttl {
		b.deposits = b.deposits[1:]
	}
	for len(b.withdrawals) > 0 && b.withdrawals[0] <= now-b.ttl {
		b.withdrawals = b.withdrawals[1:]
	}
}

func (b *naiveBudget) Deposit(now int64) {
	b.mu.Lock()
	b.trim(now)
	b.deposits = append(b.deposits, now)
	b.mu.Unlock()
}

func (b *naiveBudget) TryWithdraw(now int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trim(now)
	if b.reserve+b.percent*float64(len(b.deposits))-float64(len(b.withdrawals)) < 1 {
		return false
	}
	b.withdrawals = append(b.withdrawals, now)
	return true
}

func mustBudget(b *testing.B) *budget.RetryBudget {
	r, err := budget.New()
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkBudgetCall: one call (Deposit, or Deposit then TryWithdraw) on a
// default budget. Both read the clock once per call, which is most of the
// cost; the naive budget then stamps its events with a synthetic instant
// 20µs apart (50k requests/s), so that its queues hold 500k deposits once
// warm instead of growing with the benchmark's real rate.
func BenchmarkBudgetCall(b *testing.B) {
	for _, g := range []int{1, 32} {
		for _, op := range []string{"deposit", "deposit+trywithdraw", "deposit+stats"} {
			withdraw, stats := op == "deposit+trywithdraw", op == "deposit+stats"
			b.Run(fmt.Sprintf("op=%s/goroutines=%d/impl=sluice", op, g), func(b *testing.B) {
				r := mustBudget(b)
				b.ReportAllocs()
				budgetRun(b, g, func() {
					r.Deposit()
					if withdraw {
						r.TryWithdraw()
					}
					if stats {
						_ = r.Stats()
					}
				})
			})
			if stats {
				continue // the naive budget has no Stats
			}
			b.Run(fmt.Sprintf("op=%s/goroutines=%d/impl=naive", op, g), func(b *testing.B) {
				r := newNaiveBudget()
				var mu sync.Mutex
				var now int64
				start := time.Now()
				tick := func() int64 {
					_ = time.Since(start) // the clock read sluice pays
					mu.Lock()
					now += int64(20 * time.Microsecond)
					n := now
					mu.Unlock()
					return n
				}
				b.ReportAllocs()
				budgetRun(b, g, func() {
					r.Deposit(tick())
					if withdraw {
						r.TryWithdraw(tick())
					}
				})
			})
		}
	}
}

// budgetRun runs op b.N times on g goroutines.
func budgetRun(b *testing.B, g int, op func()) {
	if g == 1 {
		for b.Loop() {
			op()
		}
		return
	}
	b.SetParallelism(max(1, g/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			op()
		}
	})
}

// BenchmarkBudgetMemory reports the bytes per budget: its struct size
// (unsafe.Sizeof), the live heap per budget across 10 000 fresh budgets
// (runtime.MemStats delta), and the same after 500 000 deposits spread over
// them; then the naive budget's heap after 500 000 deposits (50k requests/s
// for a 10s ttl). One op builds all of it once.
func BenchmarkBudgetMemory(b *testing.B) {
	const n, events = 10_000, 500_000
	var sizeof, fresh, traffic, naive float64
	for b.Loop() {
		var rb budget.RetryBudget
		sizeof = float64(unsafe.Sizeof(rb))

		budgets := make([]*budget.RetryBudget, n)
		before := heapLive()
		for i := range budgets {
			budgets[i] = mustBudget(b)
		}
		fresh = float64(heapLive()-before) / n
		for i := range events {
			budgets[i%n].Deposit()
		}
		traffic = float64(heapLive()-before) / n
		runtime.KeepAlive(budgets)

		before = heapLive()
		nb := newNaiveBudget()
		for i := range events {
			nb.Deposit(int64(i) * int64(20*time.Microsecond))
		}
		naive = float64(heapLive() - before)
		runtime.KeepAlive(nb)
	}
	b.ReportMetric(sizeof, "sizeof-B/budget")
	b.ReportMetric(fresh, "heap-B/budget")
	b.ReportMetric(traffic, "heap-B/budget-after-traffic")
	b.ReportMetric(naive, "naive-heap-B/500k-events")
	b.ReportMetric(0, "ns/op")
}

// heapLive returns the live heap after a full collection.
func heapLive() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkBudgetIdleStall: the first call after an idle spell longer than
// the ttl, on a budget that saw 50k requests/s for 10s. The naive budget
// drops 500 000 timestamps under its lock, stalling every caller; sluice
// resets at most ten buckets (internal/window's BenchmarkAdvanceAfterIdle:
// tens of nanoseconds), which cannot be shown here without an injected clock.
func BenchmarkBudgetIdleStall(b *testing.B) {
	const events = 500_000
	full := make([]int64, events)
	for i := range full {
		full[i] = int64(i) * int64(20*time.Microsecond)
	}
	after := full[events-1] + int64(11*time.Second)
	nb := newNaiveBudget()
	b.Run("impl=naive", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			nb.deposits = append(nb.deposits[:0:0], full...)
			b.StartTimer()
			nb.Deposit(after)
		}
	})
}
