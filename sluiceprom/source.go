package sluiceprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// A Source is one value whose counters a Collector reads at every scrape:
// a limiter, a pool, a breaker or a retry budget. Make one with Limiter,
// Keyed, Pool, Breaker or Budget.
type Source struct {
	kind  string // "limiter", "breaker" or "budget": names are unique per kind
	name  string
	alg   string
	waits *waitsOption // nil: no wait histogram
	err   error        // reported by NewCollector
	// bind makes the source's descriptors and returns them with the
	// function that sends its metrics at a scrape.
	bind func(s *Source) ([]*prometheus.Desc, func(chan<- prometheus.Metric))
}

// A SourceOption configures a limiter's Source.
type SourceOption interface{ apply(*Source) }

type algorithmOption string

func (a algorithmOption) apply(s *Source) { s.alg = string(a) }

// Algorithm sets the algorithm label of a limiter's metrics ("GCRA",
// "TokenBucket", "SlidingWindow"...): the limiters do not report it, so it
// is whatever the caller says. Without it, the label is empty, which
// Prometheus treats as absent.
func Algorithm(name string) SourceOption { return algorithmOption(name) }

// Limiter observes the counters of a limiter: granted, rejected, refunded
// and canceled, and the waiting gauge. stats is usually the limiter's
// Stats method (actor.Limiter.Stats), or a function that returns the
// permits.Stats of a limiter whose Stats embeds them. name must not be
// empty.
func Limiter(name string, stats func() permits.Stats, opts ...SourceOption) Source {
	s := limiterSource(name, stats == nil, opts)
	s.bind = func(s *Source) ([]*prometheus.Desc, func(chan<- prometheus.Metric)) {
		d := s.limiterDescs()
		lim := s.limiterMetrics(d)
		return d.all, func(ch chan<- prometheus.Metric) { lim.send(ch, stats()) }
	}
	return s
}

// Keyed observes a keyed.Limiter (its Stats method): what Limiter
// observes, over every key, and the number of live keys.
func Keyed(name string, stats func() keyed.Stats, opts ...SourceOption) Source {
	s := limiterSource(name, stats == nil, opts)
	s.bind = func(s *Source) ([]*prometheus.Desc, func(chan<- prometheus.Metric)) {
		d := s.limiterDescs()
		lim, nKeys := s.limiterMetrics(d), d.of(keys)
		return d.all, func(ch chan<- prometheus.Metric) {
			st := stats()
			lim.send(ch, st.Stats)
			ch <- gauge(nKeys, int64(st.Keys))
		}
	}
	return s
}

// Pool observes an actor.Pool (its Stats method): what Limiter observes,
// and the units the pool holds now and its size.
func Pool(name string, stats func() actor.PoolStats, opts ...SourceOption) Source {
	s := limiterSource(name, stats == nil, opts)
	s.bind = func(s *Source) ([]*prometheus.Desc, func(chan<- prometheus.Metric)) {
		d := s.limiterDescs()
		lim, usage, limit := s.limiterMetrics(d), d.of(poolUsage), d.of(poolLimit)
		return d.all, func(ch chan<- prometheus.Metric) {
			st := stats()
			lim.send(ch, st.Stats)
			ch <- gauge(usage, st.InFlight)
			ch <- gauge(limit, st.Size)
		}
	}
	return s
}

func limiterSource(name string, nilStats bool, opts []SourceOption) Source {
	s := Source{kind: "limiter", name: name}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	switch {
	case name == "":
		s.err = invalid("a limiter needs a name, got \"\"")
	case nilStats:
		s.err = invalid("limiter %q: the stats function is nil", name)
	case s.waits != nil && s.waits.h == nil:
		s.err = invalid("limiter %q: Waits needs a histogram, got nil", name)
	}
	return s
}

func (s *Source) limiterDescs() *descs {
	return &descs{labels: prometheus.Labels{NameLabel: s.name, AlgorithmLabel: s.alg}}
}

// limiterMetrics are the descriptors of the counters every limiter keeps,
// and of its wait histogram when it has one.
type limiterMetrics struct {
	granted, rejected, refunded, canceled, waiting *prometheus.Desc

	waits     *prometheus.Desc // nil: no histogram
	histogram *permits.WaitHistogram
}

func (s *Source) limiterMetrics(d *descs) limiterMetrics {
	m := limiterMetrics{granted: d.of(granted), rejected: d.of(rejected), refunded: d.of(refunded),
		canceled: d.of(canceled), waiting: d.of(waiting)}
	if s.waits != nil {
		m.waits, m.histogram = d.of(waitSeconds), s.waits.h
	}
	return m
}

func (m limiterMetrics) send(ch chan<- prometheus.Metric, st permits.Stats) {
	ch <- counter(m.granted, st.Granted)
	ch <- counter(m.rejected, st.Rejected)
	ch <- counter(m.refunded, st.Refunded)
	ch <- counter(m.canceled, st.Canceled)
	ch <- gauge(m.waiting, int64(st.Waiting))
	if m.waits != nil {
		ch <- waitHistogram(m.waits, m.histogram.Snapshot())
	}
}

func counter(d *prometheus.Desc, v uint64) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
}

func gauge(d *prometheus.Desc, v int64) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
}

func invalid(format string, args ...any) error {
	return configerr.Errorf("sluiceprom", format, args...)
}
