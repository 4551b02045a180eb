package actor_test

import (
	"testing"

	"github.com/sluicehq/sluice/actor"
)

// BenchmarkAdaptiveAcquireRelease measures Acquire plus the end of the
// permit on the fast path, against a plain Pool in the same run, alone
// and with 64 goroutines at it (SetParallelism(32) on 2 cores). Done(Success) adds a clock read and a push on the samples'
// stack to Release's one atomic add.
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
			for b.Loop() {
				op()
			}
		})
		b.Run(bc.name+"/64", func(b *testing.B) {
			closer, op := bc.mk(b)
			defer closer()
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					op()
				}
			})
		})
	}
}
