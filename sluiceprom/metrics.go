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

// The descriptors, one per metric. The names are sluiceotel's in
// Prometheus's style: underscores, _total on counters, no unit suffix for
// counts of things. Granted and canceled are permits.Stats's words, so
// that a metric and the field it reads have one name.
var (
	limiterLabels = []string{NameLabel, AlgorithmLabel}

	granted  = desc("sluice_limiter_granted_total", "Permits granted since the limiter was made.", limiterLabels)
	rejected = desc("sluice_limiter_rejected_total", "Requests refused (ErrRateLimited, or Allow's false).", limiterLabels)
	refunded = desc("sluice_limiter_refunded_total", "Grants given back unused; also counted in granted.", limiterLabels)
	canceled = desc("sluice_limiter_canceled_total", "Waiters whose context ended while they waited.", limiterLabels)
	waiting  = desc("sluice_limiter_waiting", "Acquires waiting for their answer now.", limiterLabels)
	keys     = desc("sluice_limiter_keys", "Keys a keyed limiter holds now.", limiterLabels)

	poolUsage = desc("sluice_pool_usage", "Cost units a pool holds now.", limiterLabels)
	poolLimit = desc("sluice_pool_limit", "Cost units a pool holds at most.", limiterLabels)

	breakerState       = desc("sluice_breaker_state", "1 for the breaker's current state, 0 for the others.", []string{NameLabel, StateLabel})
	breakerTransitions = desc("sluice_breaker_transitions_total", "Changes of state since the breaker was made.", []string{NameLabel})

	budgetBalance     = desc("sluice_budget_balance", "Retries the budget would allow now.", []string{NameLabel})
	budgetDeposits    = desc("sluice_budget_deposits", "Requests deposited in the budget's window.", []string{NameLabel})
	budgetWithdrawals = desc("sluice_budget_withdrawals", "Retries withdrawn in the budget's window.", []string{NameLabel})
	budgetRefusals    = desc("sluice_budget_refusals", "Retries refused in the budget's window.", []string{NameLabel})

	allDescs = []*prometheus.Desc{
		granted, rejected, refunded, canceled, waiting, keys, poolUsage, poolLimit,
		breakerState, breakerTransitions, budgetBalance, budgetDeposits, budgetWithdrawals, budgetRefusals,
	}
)

func desc(name, help string, labels []string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}
