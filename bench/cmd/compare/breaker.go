package main

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/bench/internal/scenario"
)

func init() { breakerSection = measureBreaker }

func measureBreaker(r *runner, b *strings.Builder) {
	b.WriteString("## Circuit breaker\n\n")
	fmt.Fprintf(b, "ns per call through a closed breaker with default settings: sluice `Do(ctx, fn)` vs gobreaker `Execute(fn)`. "+
		"*Half failing*: every other call fails, so both keep counting without tripping. Goal: sluice ≤ %.1f× gobreaker.\n\n", goalBreaker)
	t := table{header: []string{"calls", "goroutines", "sluice breaker.Do", "gobreaker Execute", "sluice ÷ gobreaker", "goal met"}}
	for _, failing := range []bool{false, true} {
		name := "succeeding"
		if failing {
			name = "half failing"
		}
		for _, g := range []int{1, 2, 32} {
			m := r.micros("breaker "+name, g, scenario.Breaker(failing))
			met := "–"
			if m[0].ok && m[1].ok {
				met = yesNo(m[0].ns <= goalBreaker*m[1].ns)
			}
			t.add(name, fmt.Sprint(g), m[0].cell(), m[1].cell(), ratio(m[0].ns, m[1].ns), met)
		}
	}
	t.write(b)
}
