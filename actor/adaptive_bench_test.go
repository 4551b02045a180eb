package actor_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/actor"
)

// BenchmarkAdaptiveAcquireRelease measures Acquire plus the end of the
// permit on the fast path, against a plain Pool in the same run, alone
// and with 64 goroutines at it (SetParallelism(32) on 2 cores).
// Done(Success) adds, for one grant in a stride, two clock reads and a
// cell of the samples' ring to Release's one atomic add. Besides ns/op it
// reports cpu-ns/op, the process's CPU time per operation: on a machine
// that others load, the wall time counts the time the benchmark waited
// for a core, and the CPU time does not.
func BenchmarkAdaptiveAcquireRelease(b *testing.B) {
	pool := func(b *testing.B) (func() error, func()) {
		p, _ := actor.NewPool(1 << 20)
		return p.Close, func() {
			pm, err := p.Acquire(b.Context(), 1)
			if err != nil {
				b.Fatal(err)
			}
			pm.Release()
		}
	}
	adaptive := func(o actor.Outcome) func(b *testing.B) (func() error, func()) {
		return func(b *testing.B) (func() error, func()) {
			p, _ := actor.NewAdaptivePool(&actor.AIMD{}, actor.WithLimits(1<<20, 1<<20, 1<<20))
			return p.Close, func() {
				pm, err := p.Acquire(b.Context(), 1)
				if err != nil {
					b.Fatal(err)
				}
				p.Done(pm, o)
			}
		}
	}
	for _, bc := range []struct {
		name string
		mk   func(*testing.B) (func() error, func())
	}{
		{"Pool", pool},
		{"Adaptive/Release", adaptive(actor.Dropped)},
		{"Adaptive/Done", adaptive(actor.Success)},
	} {
		b.Run(bc.name+"/1", func(b *testing.B) {
			closer, op := bc.mk(b)
			defer closer()
			cpu := cpuTime()
			for b.Loop() {
				op()
			}
			reportCPU(b, cpu)
		})
		b.Run(bc.name+"/64", func(b *testing.B) {
			closer, op := bc.mk(b)
			defer closer()
			b.SetParallelism(32)
			cpu := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					op()
				}
			})
			reportCPU(b, cpu)
		})
	}
}

// reportCPU reports the CPU time used since from, per operation.
func reportCPU(b *testing.B, from time.Duration) {
	b.ReportMetric(float64(cpuTime()-from)/float64(b.N), "cpu-ns/op")
}
