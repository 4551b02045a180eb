package sluiceprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// A Source is one value whose counters a Collector reads at every scrape:
// a limiter, a pool, a breaker or a retry budget. Make one with Limiter,
// Keyed, Pool, Breaker or Budget.
type Source struct {
	kind    string // "limiter", "breaker" or "budget": names are unique per kind
	name    string
	alg     string
	err     error // reported by NewCollector
	collect func(s *Source, ch chan<- prometheus.Metric)
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
	s.collect = func(s *Source, ch chan<- prometheus.Metric) { s.stats(ch, stats()) }
	return s
}

// Keyed observes a keyed.Limiter (its Stats method): what Limiter
// observes, over every key, and the number of live keys.
func Keyed(name string, stats func() keyed.Stats, opts ...SourceOption) Source {
	s := limiterSource(name, stats == nil, opts)
	s.collect = func(s *Source, ch chan<- prometheus.Metric) {
		st := stats()
		s.stats(ch, st.Stats)
		ch <- s.limiterMetric(keys, prometheus.GaugeValue, float64(st.Keys))
	}
	return s
}

// Pool observes an actor.Pool (its Stats method): what Limiter observes,
// and the units the pool holds now and its size.
func Pool(name string, stats func() actor.PoolStats, opts ...SourceOption) Source {
	s := limiterSource(name, stats == nil, opts)
	s.collect = func(s *Source, ch chan<- prometheus.Metric) {
		st := stats()
		s.stats(ch, st.Stats)
		ch <- s.limiterMetric(poolUsage, prometheus.GaugeValue, float64(st.InFlight))
		ch <- s.limiterMetric(poolLimit, prometheus.GaugeValue, float64(st.Size))
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
	}
	return s
}

// stats sends the counters every limiter keeps.
func (s *Source) stats(ch chan<- prometheus.Metric, st permits.Stats) {
	ch <- s.limiterMetric(granted, prometheus.CounterValue, float64(st.Granted))
	ch <- s.limiterMetric(rejected, prometheus.CounterValue, float64(st.Rejected))
	ch <- s.limiterMetric(refunded, prometheus.CounterValue, float64(st.Refunded))
	ch <- s.limiterMetric(canceled, prometheus.CounterValue, float64(st.Canceled))
	ch <- s.limiterMetric(waiting, prometheus.GaugeValue, float64(st.Waiting))
}

func (s *Source) limiterMetric(d *prometheus.Desc, t prometheus.ValueType, v float64) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, t, v, s.name, s.alg)
}

// Breaker observes a circuit breaker (its Snapshot method): its state, as
// a gauge that is 1 for the current state and 0 for the two others, and
// its transitions since it was made. The name label is the breaker's
// WithName, read once here.
func Breaker(snapshot func() breaker.Snapshot) Source {
	if snapshot == nil {
		return Source{kind: "breaker", err: invalid("Breaker: the snapshot function is nil")}
	}
	s := Source{kind: "breaker", name: snapshot().Name}
	s.collect = func(s *Source, ch chan<- prometheus.Metric) {
		snap := snapshot()
		for _, st := range []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen} {
			ch <- prometheus.MustNewConstMetric(breakerState, prometheus.GaugeValue,
				boolFloat(snap.State == st), s.name, st.String())
		}
		ch <- prometheus.MustNewConstMetric(breakerTransitions, prometheus.CounterValue,
			float64(snap.Transitions), s.name)
	}
	return s
}

// Budget observes a retry budget (its Stats method): its balance and the
// deposits, withdrawals and refusals still in its window. These three are
// gauges, not counters: they count the budget's window (its ttl), and fall
// as events leave it. The name label is the budget's WithName, read once
// here.
func Budget(stats func() budget.Stats) Source {
	if stats == nil {
		return Source{kind: "budget", err: invalid("Budget: the stats function is nil")}
	}
	s := Source{kind: "budget", name: stats().Name}
	s.collect = func(s *Source, ch chan<- prometheus.Metric) {
		st := stats()
		for _, m := range []struct {
			d *prometheus.Desc
			v int64
		}{{budgetBalance, st.Balance}, {budgetDeposits, st.Deposits}, {budgetWithdrawals, st.Withdrawals}, {budgetRefusals, st.Refusals}} {
			ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, float64(m.v), s.name)
		}
	}
	return s
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func invalid(format string, args ...any) error {
	return configerr.Errorf("sluiceprom", format, args...)
}
