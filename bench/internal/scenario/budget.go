package scenario

import (
	"runtime"

	"github.com/sluicehq/sluice/budget"
)

// Budget returns the subjects of a retry budget with default settings:
// Deposit (every request) and TryWithdraw (every retry), on a budget fed
// one deposit per withdrawal attempt so that both outcomes occur.
func Budget() []Micro {
	return []Micro{
		budgetMicro("budget Deposit", nil),
		budgetMicro("budget Deposit+TryWithdraw", func(b *budget.RetryBudget) { b.TryWithdraw() }),
	}
}

// BudgetStats is the subject of Stats, what an operator's dashboard reads,
// on a budget fed one deposit per read.
func BudgetStats() Micro {
	return budgetMicro("budget Deposit+Stats", func(b *budget.RetryBudget) { _ = b.Stats() })
}

// budgetMicro is a subject that makes a budget with default settings and,
// for each operation, deposits once and then does then (nil: nothing more).
func budgetMicro(name string, then func(*budget.RetryBudget)) Micro {
	return Micro{Name: name, New: func() (func(int), func(), error) {
		b, err := budget.New()
		if err != nil {
			return nil, nil, err
		}
		return func(n int) {
			for range n {
				b.Deposit()
				if then != nil {
					then(b)
				}
			}
		}, func() {}, nil
	}}
}

// BudgetBytes returns the live heap one retry budget with default settings
// holds, averaged over n of them.
func BudgetBytes(n int) (float64, error) {
	keep := make([]*budget.RetryBudget, n)
	var m0, m1 runtime.MemStats
	gc()
	runtime.ReadMemStats(&m0)
	for i := range keep {
		b, err := budget.New()
		if err != nil {
			return 0, err
		}
		keep[i] = b
	}
	gc()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(keep)
	return (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / float64(n), nil
}
