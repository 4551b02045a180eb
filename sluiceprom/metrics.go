package sluiceprom

import "github.com/prometheus/client_golang/prometheus"

// The label names. name is the one the user gave the limiter (or the
// breaker's WithName, the budget's WithName): a bounded set, never a key
// of a keyed limiter.
const (
	NameLabel      = "name"
	AlgorithmLabel = "algorithm"
	StateLabel     = "state"
)

// A metric is a name and its help. The names are sluiceotel's in
// Prometheus's style: underscores, _total on counters, no unit suffix for
// counts of things. Granted and canceled are permits.Stats's words, so
// that a metric and the field it reads have one name.
type metric struct{ name, help string }

var (
	granted  = metric{"sluice_limiter_granted_total", "Permits granted since the limiter was made."}
	rejected = metric{"sluice_limiter_rejected_total", "Requests refused (ErrRateLimited, or Allow's false)."}
	refunded = metric{"sluice_limiter_refunded_total", "Grants given back unused; also counted in granted."}
	canceled = metric{"sluice_limiter_canceled_total", "Waiters whose context ended while they waited."}
	waiting  = metric{"sluice_limiter_waiting", "Acquires waiting for their answer now."}
	keys     = metric{"sluice_limiter_keys", "Keys a keyed limiter holds now."}

	waitSeconds = metric{"sluice_limiter_wait_seconds", "Time each granted Acquire waited, 0 for one granted at once."}

	poolUsage = metric{"sluice_pool_usage", "Cost units a pool holds now."}
	poolLimit = metric{"sluice_pool_limit", "Cost units a pool holds at most."}

	breakerState       = metric{"sluice_breaker_state", "1 for the breaker's current state, 0 for the others."}
	breakerTransitions = metric{"sluice_breaker_transitions_total", "Changes of state since the breaker was made."}

	budgetBalance     = metric{"sluice_budget_balance", "Retries the budget would allow now."}
	budgetDeposits    = metric{"sluice_budget_deposits", "Requests deposited in the budget's window."}
	budgetWithdrawals = metric{"sluice_budget_withdrawals", "Retries withdrawn in the budget's window."}
	budgetRefusals    = metric{"sluice_budget_refusals", "Retries refused in the budget's window."}
)

// descs makes the descriptors of one source, its labels constant: each
// source has descriptors of its own, so that two Collectors register side
// by side in one registry, and the registry refuses two sources of one
// name as it refuses any duplicate series. A scrape then builds no label
// pairs.
type descs struct {
	labels prometheus.Labels
	all    []*prometheus.Desc
}

func (d *descs) of(m metric, variable ...string) *prometheus.Desc {
	desc := prometheus.NewDesc(m.name, m.help, variable, d.labels)
	d.all = append(d.all, desc)
	return desc
}
