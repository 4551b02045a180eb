package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/bench/internal/scenario"
)

const goalAdaptive = 1.5 // AdaptivePool's Acquire+Done ÷ a plain Pool's Acquire+Release

// adaptiveSection prints the adaptive limiters side by side: on the model
// downstream, and what Acquire plus the end of a permit costs.
func adaptiveSection(r *runner, b *strings.Builder) {
	b.WriteString("## Adaptive concurrency\n\n")
	adaptiveModel(r, b)
	fmt.Fprintf(b, "ns per `Acquire(ctx, 1)` then the end of the permit with a success (sluice `Done(pm, Success)`, failsafe-go `Record`, go-concurrency-limits `OnSuccess`), on limits of %d so that nobody waits. Goal: sluice AdaptivePool ≤ %.1f× a plain Pool.\n\n", scenario.PoolSize, goalAdaptive)
	t := table{header: []string{"goroutines", "sluice Pool", "sluice AdaptivePool", "failsafe-go adaptivelimiter", "go-concurrency-limits", "AdaptivePool ÷ Pool", "failsafe-go ÷ Pool", "go-concurrency-limits ÷ Pool", "goal met"}}
	for _, g := range []int{1, 64} {
		m := r.micros("adaptive", g, scenario.AdaptiveCost())
		met := "–"
		if m[0].ok && m[1].ok {
			met = yesNo(m[1].ns <= goalAdaptive*m[0].ns)
		}
		t.add(fmt.Sprint(g), m[0].cell(), m[1].cell(), m[2].cell(), m[3].cell(),
			ratio(m[1].ns, m[0].ns), ratio(m[2].ns, m[0].ns), ratio(m[3].ns, m[0].ns), met)
	}
	t.write(b)
}

// adaptiveModel runs the model downstream's side by side, which needs a
// testing/synctest bubble and so a test binary: `go test` of the scenario
// package, which writes its table to a file. Virtual time keeps the
// machine's speed out of every figure, the peers' included (they read
// time.Now, which the bubble fakes).
func adaptiveModel(r *runner, b *strings.Builder) {
	b.WriteString("On the model downstream (bench/internal/scenario/downstream.go: C servers, 10 ± 1 ms of service, a queue of C/10, a 503 beyond), C = 100, then 50, then 100 again, offered 2 × 100 requests per 10 ms, in virtual time (testing/synctest).\n\n")
	if !r.cfg.model {
		b.WriteString("Not measured in this configuration.\n\n")
		return
	}
	dir, err := os.MkdirTemp("", "compare-adaptive")
	if err != nil {
		r.fail(err)
		return
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "table.md")
	args := []string{"test", "-count=1", "-run", "^TestAdaptiveSideBySideOnTheSameModelDownstream$"}
	if r.cfg.quick {
		args = append(args, "-short")
	}
	args = append(args, "github.com/sluicehq/sluice/bench/internal/scenario", "-args", "-adaptive.table="+file)
	r.logf("adaptive: the model downstream (go %s)", strings.Join(args, " "))
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		r.fail(fmt.Errorf("adaptive model: %w\n%s", err, out))
		return
	}
	table, err := os.ReadFile(file)
	if err != nil {
		r.fail(err)
		return
	}
	b.Write(table)
	b.WriteString("\n")
}
