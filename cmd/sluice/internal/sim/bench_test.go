package sim_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

// benchLimits are five limits near the offered rate, so that each refuses,
// delays and admits: the "five limits".
var benchLimits = []string{"gcra:1000/s,burst=50", "token:1000/s,50", "leaky:1000/s,50", "sliding:1000/s", "fixed:1000/s"}

func benchConfigs(b *testing.B, maxWait time.Duration, upstream bool) []sim.Config {
	up, err := spec.ParseUpstream("1000/s")
	if err != nil {
		b.Fatal(err)
	}
	var cfgs []sim.Config
	for _, s := range benchLimits {
		l, err := spec.Parse(s)
		if err != nil {
			b.Fatal(err)
		}
		c := sim.Config{Limit: l, MaxWait: maxWait, Window: time.Second, Bin: time.Second, Duration: time.Hour}
		if upstream {
			c.Upstream = &up
		}
		cfgs = append(cfgs, c)
	}
	return cfgs
}

func hour(b *testing.B) []traffic.Arrival {
	p, err := traffic.Parse("poisson:1000/s")
	if err != nil {
		b.Fatal(err)
	}
	a, _, err := traffic.Generate([]traffic.Pattern{p}, time.Hour, 1, nil)
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// BenchmarkHour is the goal: a simulated hour of Poisson traffic at
// 1,000 requests/s through five limits, with a window measure, an upstream
// check and per-second series, callers waiting up to 100 ms. One op is the
// whole hour; decisions/op counts the arrivals offered to the limits.
func BenchmarkHour(b *testing.B) {
	a := hour(b)
	for _, bc := range []struct {
		name string
		run  func(cfgs []sim.Config) error
	}{
		{"parallel", func(cfgs []sim.Config) error { _, err := sim.RunAll(a, cfgs); return err }},
		{"serial", func(cfgs []sim.Config) error {
			for _, c := range cfgs {
				if _, err := sim.Run(a, c); err != nil {
					return err
				}
			}
			return nil
		}},
	} {
		for _, mw := range []struct {
			name string
			d    time.Duration
		}{{"nowait", 0}, {"wait100ms", 100 * time.Millisecond}, {"forever", sim.Forever}} {
			for _, up := range []bool{false, true} {
				name := bc.name + "/" + mw.name
				if up {
					name += "/upstream"
				}
				b.Run(name, func(b *testing.B) {
					cfgs := benchConfigs(b, mw.d, up)
					for b.Loop() {
						if err := bc.run(cfgs); err != nil {
							b.Fatal(err)
						}
					}
					arrivals := float64(len(a) * len(cfgs))
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/arrivals, "ns/arrival")
				})
			}
		}
	}
}

// BenchmarkAllowAt is the baseline in the same run: the bare algorithm
// decisions a simulated hour needs, with no queue and no measures.
func BenchmarkAllowAt(b *testing.B) {
	a := hour(b)
	for b.Loop() {
		for _, s := range benchLimits {
			l, _ := spec.Parse(s)
			alg, _ := l.New()
			for _, x := range a {
				alg.AllowAt(sim.Start.Add(x.At), x.Cost)
			}
		}
	}
	decisions := float64(len(a) * len(benchLimits))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/decisions, "ns/decision")
}

// BenchmarkDay is the streaming goal: a day of Poisson traffic at 1,157
// requests a second (10^8 arrivals) through three limits, read as a stream
// and never held: goal 60 s and 200 MB on two cores. One op is the day.
// Measure the peak memory with /usr/bin/time -v.
func BenchmarkDay(b *testing.B) {
	day(b, "poisson:1157/s", sim.Retry{}, "gcra:1200/s,burst=100", "sliding:1200/s", "fixed:1200/s")
}

// BenchmarkDayPerKeyRetrying is BenchmarkDay's day with the two costlier
// paths on: the arrivals spread over 10,000 keys by Zipf's law, the three
// limits per key, and refused callers retrying twice with full jitter.
func BenchmarkDayPerKeyRetrying(b *testing.B) {
	r, err := sim.ParseRetry("max=2,after=retry-after,jitter=full")
	if err != nil {
		b.Fatal(err)
	}
	day(b, "poisson:1157/s,keys=10000,spread=zipf", r, "gcra:10/s,burst=10,per=key", "sliding:10/s,per=key", "fixed:10/s,per=key")
}

// day streams a day of the pattern through the limits, callers waiting up
// to 100 ms, an upstream of 1200/s judging every admission, series and
// window measure on.
func day(b *testing.B, pattern string, retry sim.Retry, limits ...string) {
	p, err := traffic.Parse(pattern)
	if err != nil {
		b.Fatal(err)
	}
	up, _ := spec.ParseUpstream("1200/s")
	var cfgs []sim.Config
	for _, s := range limits {
		l, err := spec.Parse(s)
		if err != nil {
			b.Fatal(err)
		}
		cfgs = append(cfgs, sim.Config{Limit: l, MaxWait: 100 * time.Millisecond, Window: time.Second, Upstream: &up,
			Bin: sim.AutoBin, Duration: 24 * time.Hour, Retry: retry, Seed: 1})
	}
	for b.Loop() {
		feed, err := traffic.Plan{Patterns: []traffic.Pattern{p}, Duration: 24 * time.Hour, Seed: 1}.Open()
		if err != nil {
			b.Fatal(err)
		}
		res, err := sim.RunStream(feed, cfgs)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res[0].Offered), "arrivals")
		b.ReportMetric(float64(res[0].Retries), "retries")
	}
}

// BenchmarkPerKey is a per-key limit over a million keys: memory is
// O(keys × state). bytes/key is everything the run allocated, the
// traffic's key names included, over its keys: an upper bound on what a
// key holds.
func BenchmarkPerKey(b *testing.B) {
	for _, s := range []string{"gcra:1/s,burst=2,per=key", "sliding:1/s,per=key", "fixed:1/s,per=key"} {
		b.Run(s[:strings.IndexByte(s, ':')], func(b *testing.B) {
			l, err := spec.Parse(s)
			if err != nil {
				b.Fatal(err)
			}
			p, err := traffic.Parse("poisson:200000/s,keys=1000000")
			if err != nil {
				b.Fatal(err)
			}
			var keys int
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				f, err := traffic.Plan{Patterns: []traffic.Pattern{p}, Duration: 10 * time.Second, Seed: 1}.Open()
				if err != nil {
					b.Fatal(err)
				}
				res, err := sim.RunStream(f, []sim.Config{{Limit: l, MaxWait: 100 * time.Millisecond}})
				if err != nil {
					b.Fatal(err)
				}
				keys = res[0].Keys
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(keys), "bytes/key")
			b.ReportMetric(float64(keys), "keys")
		})
	}
}
