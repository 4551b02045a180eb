package bench_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/bench/internal/scenario"
)

// The rate limiter side by side with x/time/rate and uber ratelimit, with
// the same bodies that cmd/compare times. Sub-benchmarks are named
// key=value so that benchstat can put the implementations side by side:
//
//	go test -run '^$' -bench . -count 10 ./... > new.txt
//	benchstat -col /impl new.txt
//
// ns/op is wall time over the operations of all goroutines together, as
// b.RunParallel reports it, for an explicit number of goroutines.

// impl names a subject for benchstat.
func impl(name string) string {
	switch name {
	case "sluice TryAcquire", "sluice Acquire (GCRA 3,000,000,001/s)":
		return "sluice"
	case "sluice Acquire (sliding window)":
		return "sluice-slidingwindow"
	case "x/time/rate AllowN", "x/time/rate WaitN", "x/time/rate":
		return "xtime"
	case "CAS-on-TAT reference":
		return "cas-reference"
	case "bare mailbox round trip":
		return "mailbox-reference"
	case "uber ratelimit":
		return "uber"
	}
	return name
}

func benchMicro(b *testing.B, m scenario.Micro, g int) {
	loop, stop, err := m.New()
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	b.ReportAllocs()
	b.ResetTimer()
	scenario.RunParallel(loop, g, max(b.N, g))
}

// BenchmarkDecision: a non-blocking decision. Goal: sluice ≤ 1.0× xtime.
func BenchmarkDecision(b *testing.B) {
	for _, c := range []struct {
		name  string
		rate  algorithms.Rate
		burst int64
	}{
		{"allowed", scenario.AllowedRate, scenario.AllowedBurst},
		{"denied", scenario.DeniedRate, scenario.DeniedBurst},
	} {
		for _, g := range []int{1, 2, 32} {
			for _, m := range scenario.Decision(c.rate, c.burst) {
				b.Run(fmt.Sprintf("calls=%s/goroutines=%d/impl=%s", c.name, g, impl(m.Name)), func(b *testing.B) {
					benchMicro(b, m, g)
				})
			}
		}
	}
}

// BenchmarkOwnerRoundTrip: an Acquire that goes through the limiter's
// goroutine and is granted at once. Goal: sluice ≤ 350 ns with many
// goroutines.
func BenchmarkOwnerRoundTrip(b *testing.B) {
	for _, g := range []int{1, 64} {
		for _, m := range scenario.RoundTrip() {
			b.Run(fmt.Sprintf("goroutines=%d/impl=%s", g, impl(m.Name)), func(b *testing.B) {
				benchMicro(b, m, g)
			})
		}
	}
}

// BenchmarkWaitPath: 1 000 goroutines sharing b.N permits at 100 000/s, one
// op per permit (so ns/op is about 10µs for every library that keeps the
// rate). The metrics that matter are reported beside it: CPU per permit
// (goal: sluice ≤ 0.7× xtime), wall time over ideal, the largest excess
// over b + floor(r·d), and the callers overtaken by one that arrived more
// than scenario.FIFOApart later.
func BenchmarkWaitPath(b *testing.B) {
	for _, k := range []scenario.WaiterKind{scenario.Sluice, scenario.XTime, scenario.Uber} {
		b.Run("impl="+impl(k.Name), func(b *testing.B) {
			spec := scenario.WaitSpec{Goroutines: 1000, Rate: algorithms.PerSecond(100_000), Burst: 100, Permits: max(b.N, 1000)}
			res, err := scenario.RunWait(k, spec)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(res.CPU)/float64(spec.Permits), "cpu-ns/permit")
			b.ReportMetric(float64(res.Wall)/float64(spec.Ideal()), "wall/ideal")
			b.ReportMetric(float64(max(res.MaxExcess, 0)), "excess")
			b.ReportMetric(float64(res.FIFOViolationsApart), "overtaken")
		})
	}
}

// BenchmarkCancelStorm: 1 000 waiters at 10 000/s, half cancelled at
// random moments; share is the rate the others still got. Goal: sluice ≥
// 0.999. One op is one storm.
func BenchmarkCancelStorm(b *testing.B) {
	for _, k := range []scenario.WaiterKind{scenario.Sluice, scenario.XTime} {
		b.Run("impl="+impl(k.Name), func(b *testing.B) {
			var shares []float64
			for i := range b.N {
				res, err := scenario.RunStorm(k, scenario.StormSpec{Waiters: 1000, Cancelled: 500, Rate: algorithms.PerSecond(10_000), Burst: 1, Seed: uint64(i)})
				if err != nil {
					b.Fatal(err)
				}
				shares = append(shares, res.Share)
			}
			slices.Sort(shares)
			b.ReportMetric(shares[len(shares)/2], "share")
		})
	}
}

// BenchmarkHeapPerWaiter: live heap per goroutine blocked in the limiter,
// and the same for a goroutine blocked on a plain channel to subtract.
// Goal: sluice ≤ 128 B beyond the channel's figure. One op is 1 000
// goroutines blocking and being released.
func BenchmarkHeapPerWaiter(b *testing.B) {
	const n = 1000
	if _, err := scenario.HeapPerWaiter(scenario.ChannelBlocker, n); err != nil { // make the goroutine descriptors
		b.Fatal(err)
	}
	for _, bl := range []scenario.Blocker{scenario.ChannelBlocker, scenario.SluiceBlocker(false), scenario.SluiceBlocker(true), scenario.XTimeBlocker} {
		b.Run("blocked="+blockedName(bl.Name), func(b *testing.B) {
			var per []float64
			for range b.N {
				v, err := scenario.HeapPerWaiter(bl, n)
				if err != nil {
					b.Fatal(err)
				}
				per = append(per, v)
			}
			slices.Sort(per)
			b.ReportMetric(per[len(per)/2], "B/waiter")
		})
	}
}

func blockedName(name string) string {
	switch name {
	case "plain channel":
		return "channel"
	case "sluice Acquire, context.Background":
		return "sluice"
	case "sluice Acquire, cancellable context":
		return "sluice-cancellable-ctx"
	}
	return "xtime-cancellable-ctx"
}

// BenchmarkAllowAtUserRates: Allow at the rates users type, where nearly
// every call in a loop is refused. Goal: sluice ≤ 1.0× xtime, for every
// algorithm with a lock-free form, at 1 and 16 goroutines per core.
func BenchmarkAllowAtUserRates(b *testing.B) {
	for _, u := range scenario.UserRates {
		for _, g := range []int{runtime.GOMAXPROCS(0), 16 * runtime.GOMAXPROCS(0)} {
			for _, m := range scenario.AllowAt(u) {
				b.Run(fmt.Sprintf("rate=%s/goroutines=%d/impl=%s", u.Name, g, strings.ReplaceAll(m.Name, " ", "-")), func(b *testing.B) {
					benchMicro(b, m, g)
				})
			}
		}
	}
}
