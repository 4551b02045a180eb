package sluiceotel

import (
	"go.opentelemetry.io/otel/metric"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
)

// Breaker observes a circuit breaker (its Snapshot method): its state, as
// a gauge that is 1 for the current state and 0 for the two others, and
// its transitions since it was made. The sluice.breaker.name attribute is
// the breaker's WithName, read once here.
func Breaker(snapshot func() breaker.Snapshot) Source {
	if snapshot == nil {
		return Source{kind: "breaker", err: invalid("Breaker: the snapshot function is nil")}
	}
	s := Source{kind: "breaker", name: snapshot().Name}
	s.bind = func(s *Source, in *instruments) func(metric.Observer) {
		at := attrsOf(BreakerNameKey.String(s.name))
		var states [3]attrs
		for i := range states {
			states[i] = attrsOf(BreakerNameKey.String(s.name), BreakerStateKey.String(breaker.State(i).String()))
		}
		return func(o metric.Observer) {
			snap := snapshot()
			for i, set := range states {
				o.ObserveInt64(in.breakerState, boolInt(snap.State == breaker.State(i)), set...)
			}
			o.ObserveInt64(in.breakerTransitions, snap.Transitions, at...)
		}
	}
	return s
}

// Budget observes a retry budget (its Stats method): its balance and the
// deposits, withdrawals and refusals still in its window. These three are
// gauges, not counters: they count the budget's window (its ttl), and fall
// as events leave it. The sluice.budget.name attribute is the budget's
// WithName, read once here.
func Budget(stats func() budget.Stats) Source {
	if stats == nil {
		return Source{kind: "budget", err: invalid("Budget: the stats function is nil")}
	}
	s := Source{kind: "budget", name: stats().Name}
	s.bind = func(s *Source, in *instruments) func(metric.Observer) {
		at := attrsOf(BudgetNameKey.String(s.name))
		return func(o metric.Observer) {
			st := stats()
			o.ObserveInt64(in.budgetBalance, st.Balance, at...)
			o.ObserveInt64(in.budgetDeposits, st.Deposits, at...)
			o.ObserveInt64(in.budgetWithdrawals, st.Withdrawals, at...)
			o.ObserveInt64(in.budgetRefusals, st.Refusals, at...)
		}
	}
	return s
}
