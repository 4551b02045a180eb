package chart_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/chart"
	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

// BenchmarkWriteMonth draws a 30-day run of three limits (goal: any run's
// charts in 5 s): with bins chosen from the run's length, a month is
// 1,440 bins of 30 minutes, as many as a minute in 50 ms bins.
func BenchmarkWriteMonth(b *testing.B) {
	const d = 30 * 24 * time.Hour
	p, _ := traffic.Parse("poisson:1/s")
	feed, err := traffic.Plan{Patterns: []traffic.Pattern{p}, Duration: d, Seed: 1}.Open()
	if err != nil {
		b.Fatal(err)
	}
	up, _ := spec.ParseUpstream("100/1m")
	var cfgs []sim.Config
	for _, s := range []string{"fixed:100/1m", "gcra:100/1m,burst=10", "sliding:100/1m"} {
		l, _ := spec.Parse(s)
		cfgs = append(cfgs, sim.Config{Limit: l, MaxWait: 20 * time.Second, Window: time.Minute, Upstream: &up, Bin: sim.AutoBin, Duration: d})
	}
	res, err := sim.RunStream(feed, cfgs)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for b.Loop() {
		if _, err := chart.Write(dir, res, chart.Options{Upstream: &up}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(res[0].AdmittedUnitsPerBin)), "bins")
}
