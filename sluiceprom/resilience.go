package sluiceprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
)

// Breaker observes a circuit breaker (its Snapshot method): its state, as
// a gauge that is 1 for the current state and 0 for the two others, and
// its transitions since it was made. The name label is the breaker's
// WithName, read once here.
func Breaker(snapshot func() breaker.Snapshot) Source {
	if snapshot == nil {
		return Source{kind: "breaker", err: invalid("Breaker: the snapshot function is nil")}
	}
	s := Source{kind: "breaker", name: snapshot().Name}
	s.bind = func(s *Source) ([]*prometheus.Desc, func(chan<- prometheus.Metric)) {
		d := &descs{labels: prometheus.Labels{NameLabel: s.name}}
		state, transitions := d.of(breakerState, StateLabel), d.of(breakerTransitions)
		return d.all, func(ch chan<- prometheus.Metric) {
			snap := snapshot()
			for _, st := range []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen} {
				var v float64
				if snap.State == st {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(state, prometheus.GaugeValue, v, st.String())
			}
			ch <- counter(transitions, uint64(snap.Transitions))
		}
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
	s.bind = func(s *Source) ([]*prometheus.Desc, func(chan<- prometheus.Metric)) {
		d := &descs{labels: prometheus.Labels{NameLabel: s.name}}
		balance, deposits := d.of(budgetBalance), d.of(budgetDeposits)
		withdrawals, refusals := d.of(budgetWithdrawals), d.of(budgetRefusals)
		return d.all, func(ch chan<- prometheus.Metric) {
			st := stats()
			ch <- gauge(balance, st.Balance)
			ch <- gauge(deposits, st.Deposits)
			ch <- gauge(withdrawals, st.Withdrawals)
			ch <- gauge(refusals, st.Refusals)
		}
	}
	return s
}
