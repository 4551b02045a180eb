package sluiceprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/internal/metricsrc"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// A Source is one value whose counters a Collector reads at every scrape:
// a limiter, a pool, a breaker, a retry budget or a Transport. Make one
// with Limiter, Keyed, Pool, Breaker, Budget or Transport.
type Source struct {
	kind  string // "limiter", "breaker", "budget" or "transport": names are unique per kind
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
	return source(metricsrc.Limiter, name, stats, opts)
}

// Keyed observes a keyed.Limiter (its Stats method): what Limiter
// observes, over every key, and the number of live keys.
func Keyed(name string, stats func() keyed.Stats, opts ...SourceOption) Source {
	return source(metricsrc.Keyed, name, stats, opts)
}

// Pool observes an actor.Pool (its Stats method): what Limiter observes,
// and the units the pool holds now and its size.
func Pool(name string, stats func() actor.PoolStats, opts ...SourceOption) Source {
	return source(metricsrc.Pool, name, stats, opts)
}

// Breaker observes a circuit breaker (its Snapshot method): its state, as
// a gauge that is 1 for the current state and 0 for the two others, and
// its transitions since it was made. The name label is the breaker's
// WithName, read once here.
func Breaker(snapshot func() breaker.Snapshot) Source {
	return source(metricsrc.Breaker, "", snapshot, nil)
}

// Budget observes a retry budget (its Stats method): its balance and the
// deposits, withdrawals and refusals still in its window. These three are
// gauges, not counters: they count the budget's window (its ttl), and fall
// as events leave it. The name label is the budget's WithName, read once
// here.
func Budget(stats func() budget.Stats) Source {
	return source(metricsrc.Budget, "", stats, nil)
}

// Transport observes an httplimit.Transport (its Stats method): requests,
// attempts, paced waits, retries and those the budget refused, attempts
// the breaker refused, pauses started by the status that asked (the
// reason label), responses by class (the class label) and the hosts
// paused now. name, the name label, names the API it calls and must not
// be empty; hosts are never labels.
func Transport(name string, stats func() httplimit.TransportStats) Source {
	return source(metricsrc.Transport, name, stats, nil)
}

// source is a Source of kind k: its readings, sent from one call of
// stats per scrape, and the wait histogram of a limiter given Waits.
func source[T any](k *metricsrc.Kind[T], name string, stats func() T, opts []SourceOption) Source {
	s := Source{kind: k.Name}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	s.name, s.err = metricsrc.Named("sluiceprom", k, name, stats)
	if s.err == nil && s.waits != nil && s.waits.h == nil {
		s.err = invalid("limiter %q: Waits needs a histogram, got nil", name)
	}
	if s.err != nil {
		return s
	}
	s.bind = func(s *Source) ([]*prometheus.Desc, func(chan<- prometheus.Metric)) {
		labels := prometheus.Labels{NameLabel: s.name}
		if k.Algorithm {
			labels[AlgorithmLabel] = s.alg
		}
		d := &descs{labels: labels}
		send := sender(k, stats, d)
		if s.waits == nil {
			return d.all, send
		}
		waits, h := d.of(waitSeconds), s.waits.h
		return d.all, func(ch chan<- prometheus.Metric) {
			send(ch)
			ch <- waitHistogram(waits, h.Snapshot())
		}
	}
	return s
}

// sender makes the descriptor of every reading of k and returns the
// function that sends them all from one call of stats.
func sender[T any](k *metricsrc.Kind[T], stats func() T, d *descs) func(chan<- prometheus.Metric) {
	type series struct {
		desc   *prometheus.Desc
		kind   prometheus.ValueType
		values []string // the label's values, or none
	}
	all := make([]series, len(k.Readings))
	for i, r := range k.Readings {
		var variable []string
		if r.Label != "" {
			variable = []string{r.Label}
		}
		all[i] = series{desc: d.of(metric{r.PromName(), r.Desc}, variable...), kind: prometheus.GaugeValue, values: r.Values}
		if r.Instrument == metricsrc.Counter {
			all[i].kind = prometheus.CounterValue
		}
	}
	return func(ch chan<- prometheus.Metric) {
		v := stats()
		for i, r := range k.Readings {
			s := all[i]
			if s.values == nil {
				ch <- prometheus.MustNewConstMetric(s.desc, s.kind, float64(r.Read(v, 0)))
				continue
			}
			for j, label := range s.values {
				ch <- prometheus.MustNewConstMetric(s.desc, s.kind, float64(r.Read(v, j)), label)
			}
		}
	}
}

func invalid(format string, args ...any) error {
	return configerr.Errorf("sluiceprom", format, args...)
}
