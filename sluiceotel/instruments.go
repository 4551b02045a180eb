package sluiceotel

import (
	"math"

	"go.opentelemetry.io/otel/metric"

	"github.com/sluicehq/sluice/permits"
)

// instruments are the asynchronous instruments of one Registration. The
// names follow OpenTelemetry's conventions: dotted lower case, a namespace
// per kind of source, a unit in braces for counts of things. Granted and
// canceled are permits.Stats's words, so that a metric and the field it
// reads have one name.
type instruments struct {
	granted, rejected, refunded, canceled metric.Int64ObservableCounter
	waiting, keys, poolUsage, poolLimit   metric.Int64ObservableUpDownCounter
	breakerState                          metric.Int64ObservableGauge
	breakerTransitions                    metric.Int64ObservableCounter
	budgetBalance, budgetDeposits         metric.Int64ObservableGauge
	budgetWithdrawals, budgetRefusals     metric.Int64ObservableGauge
}

// newInstruments makes the instruments on meter and returns them with the
// list RegisterCallback needs.
func newInstruments(meter metric.Meter) (*instruments, []metric.Observable, error) {
	var in instruments
	m := maker{meter: meter}
	in.granted = m.counter("sluice.limiter.granted", "{permit}", "Permits granted since the limiter was made.")
	in.rejected = m.counter("sluice.limiter.rejected", "{request}", "Requests refused (ErrRateLimited, or Allow's false).")
	in.refunded = m.counter("sluice.limiter.refunded", "{permit}", "Grants given back unused; also counted in granted.")
	in.canceled = m.counter("sluice.limiter.canceled", "{request}", "Waiters whose context ended while they waited.")
	in.waiting = m.upDown("sluice.limiter.waiting", "{request}", "Acquires waiting for their answer now.")
	in.keys = m.upDown("sluice.limiter.keys", "{key}", "Keys a keyed limiter holds now.")
	in.poolUsage = m.upDown("sluice.pool.usage", "{unit}", "Cost units a pool holds now.")
	in.poolLimit = m.upDown("sluice.pool.limit", "{unit}", "Cost units a pool holds at most.")
	in.breakerState = m.gauge("sluice.breaker.state", "{breaker}", "1 for the breaker's current state, 0 for the others.")
	in.breakerTransitions = m.counter("sluice.breaker.transitions", "{transition}", "Changes of state since the breaker was made.")
	in.budgetBalance = m.gauge("sluice.budget.balance", "{retry}", "Retries the budget would allow now.")
	in.budgetDeposits = m.gauge("sluice.budget.deposits", "{request}", "Requests deposited in the budget's window.")
	in.budgetWithdrawals = m.gauge("sluice.budget.withdrawals", "{retry}", "Retries withdrawn in the budget's window.")
	in.budgetRefusals = m.gauge("sluice.budget.refusals", "{retry}", "Retries refused in the budget's window.")
	return &in, m.all, m.err
}

// maker makes instruments, keeping the first error.
type maker struct {
	meter metric.Meter
	all   []metric.Observable
	err   error
}

func (m *maker) counter(name, unit, desc string) metric.Int64ObservableCounter {
	i, err := m.meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	m.add(i, err)
	return i
}

func (m *maker) upDown(name, unit, desc string) metric.Int64ObservableUpDownCounter {
	i, err := m.meter.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	m.add(i, err)
	return i
}

func (m *maker) gauge(name, unit, desc string) metric.Int64ObservableGauge {
	i, err := m.meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	m.add(i, err)
	return i
}

func (m *maker) add(i metric.Observable, err error) {
	if err != nil && m.err == nil {
		m.err = err
	}
	m.all = append(m.all, i)
}

// observeStats observes the counters every limiter keeps.
func (in *instruments) observeStats(o metric.Observer, st permits.Stats, at attrs) {
	o.ObserveInt64(in.granted, clamp(st.Granted), at...)
	o.ObserveInt64(in.rejected, clamp(st.Rejected), at...)
	o.ObserveInt64(in.refunded, clamp(st.Refunded), at...)
	o.ObserveInt64(in.canceled, clamp(st.Canceled), at...)
	o.ObserveInt64(in.waiting, int64(st.Waiting), at...)
}

// clamp is n as an int64, the instruments' type; a counter past 2^63
// (centuries at a billion a second) stays at the largest value.
func clamp(n uint64) int64 { return int64(min(n, math.MaxInt64)) }
