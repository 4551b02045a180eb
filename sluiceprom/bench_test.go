package sluiceprom_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/sluiceprom"
)

// newLimiters returns n limiters that grant everything a benchmark asks.
func newLimiters(b *testing.B, n int) []*actor.Limiter {
	lims := make([]*actor.Limiter, n)
	for i := range lims {
		gcra, err := algorithms.NewGCRA(algorithms.PerSecond(1e9), 1e12)
		if err != nil {
			b.Fatal(err)
		}
		lims[i] = actor.MustNew(gcra)
		b.Cleanup(func() { lims[i].Close() })
		lims[i].Allow()
	}
	return lims
}

// BenchmarkCollect is what one Gather of n limiters costs a registry (a
// scrape less the HTTP encoding), per limiter; BenchmarkStats is the
// baseline, the same limiters' Stats read by hand, which every scrape pays.
func BenchmarkCollect(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprint("limiters=", n), func(b *testing.B) {
			sources := make([]sluiceprom.Source, n)
			for i, l := range newLimiters(b, n) {
				sources[i] = sluiceprom.Limiter(fmt.Sprint("lim", i), l.Stats, sluiceprom.Algorithm("GCRA"))
			}
			c, err := sluiceprom.NewCollector(sources...)
			if err != nil {
				b.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(c)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/limiter")
		})
	}
}

func BenchmarkStats(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprint("limiters=", n), func(b *testing.B) {
			lims := newLimiters(b, n)
			var sum uint64
			for b.Loop() {
				for _, l := range lims {
					sum += l.Stats().Granted
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/limiter")
			_ = sum
		})
	}
}
