package scenario_test

import (
	"flag"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/bench/internal/scenario"
)

// adaptiveTable, when set, is where TestAdaptiveSideBySide writes its
// table (cmd/compare -only adaptive sets it).
var adaptiveTable = flag.String("adaptive.table", "", "write the adaptive side by side's table to this file")

// Every subject runs the same timeline on the same model downstream, in
// virtual time: the peers read time.Now, which a synctest bubble fakes,
// so no machine's speed enters a figure. The rule pinned: every limiter
// keeps its limit within its ceiling and serves the model, and sluice's
// converges on C.
func TestAdaptiveSideBySideOnTheSameModelDownstream(t *testing.T) {
	dur := 4 * time.Second
	if testing.Short() {
		dur = 2 * time.Second
	}
	phases := scenario.ModelPhases(dur)
	subjects := scenario.AdaptiveSubjects()
	results := make([][]scenario.PhaseResult, len(subjects))
	for i, s := range subjects {
		synctest.Test(t, func(t *testing.T) {
			res, err := scenario.RunAdaptive(s, phases)
			if err != nil {
				t.Fatal(err)
			}
			results[i] = res
		})
		for j, r := range results[i] {
			t.Logf("%s, C=%d: %+v", s.Name, phases[j].Servers, r)
			if r.MaxLimit > 400 || r.Goodput <= 0 {
				t.Errorf("%s, C=%d: highest limit %d (ceiling 400), goodput %.3f", s.Name, phases[j].Servers, r.MaxLimit, r.Goodput)
			}
		}
		if strings.HasPrefix(s.Name, "sluice") {
			if results[i][0].Settled < 0 {
				t.Errorf("%s never converged on C", s.Name)
			}
		}
	}
	table := scenario.AdaptiveTable(subjects, phases, results) + "\n" + scenario.AdaptiveGoals(subjects, phases, results)
	t.Log("\n" + table)
	if *adaptiveTable != "" {
		if err := os.WriteFile(*adaptiveTable, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
