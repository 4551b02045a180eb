package sluiceprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/permits"
)

type waitsOption struct{ h *permits.WaitHistogram }

func (w *waitsOption) apply(s *Source) { s.waits = w }

// Waits adds sluice_limiter_wait_seconds to a limiter's (or keyed
// limiter's, or pool's) metrics: a Prometheus histogram of the time each
// granted Acquire waited, read from h at every scrape. h must be the
// histogram the limiter was made with (actor.WithObserver(h),
// keyed.WithObserver(h)). Its buckets are the histogram's own, so that a
// scrape only copies them: upper bounds from 1µs doubling to 4294.967296s (about 71.6 minutes)
// (permits.WaitBuckets), every longer wait in +Inf alone.
// A nil h is a configuration error of NewCollector.
func Waits(h *permits.WaitHistogram) SourceOption { return &waitsOption{h} }

// waitHistogram is s as a constant Prometheus histogram: cumulative
// buckets whose upper bounds are s.Bounds in seconds (inclusive, as
// Prometheus's le is), the last bucket being +Inf, the count and sum.
func waitHistogram(d *prometheus.Desc, s permits.WaitSnapshot) prometheus.Metric {
	buckets := make(map[float64]uint64, len(s.Bounds))
	var below uint64
	for i, bound := range s.Bounds {
		below += s.Counts[i]
		buckets[bound.Seconds()] = below
	}
	return prometheus.MustNewConstHistogram(d, s.Count, s.Sum.Seconds(), buckets)
}
