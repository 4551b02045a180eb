package main

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/bench/internal/scenario"
)

func init() { budgetSection = measureBudget }

func measureBudget(r *runner, b *strings.Builder) {
	b.WriteString("## Retry budget\n\n")
	b.WriteString("ns per operation on a budget with default settings (no peer in Go's usual toolbox), and the live heap one budget holds.\n\n")
	t := table{header: []string{"operation", "goroutines", "cost"}}
	subjects := append(scenario.Budget(), scenario.BudgetStats())
	for _, g := range []int{1, 2, 32} {
		m := r.micros("budget", g, subjects)
		for i, s := range subjects {
			t.add(s.Name, fmt.Sprint(g), m[i].cell())
		}
	}
	var sizes []float64
	for range r.cfg.count {
		v, err := scenario.BudgetBytes(1000)
		if err != nil {
			r.fail(fmt.Errorf("budget bytes: %w", err))
			break
		}
		sizes = append(sizes, v)
	}
	if len(sizes) > 0 {
		r.logf("budget bytes: %.0f B", median(sizes))
		t.add("heap per budget (`budget.New()`)", "–", fmt.Sprintf("%.0f B", median(sizes)))
	}
	t.write(b)
}
