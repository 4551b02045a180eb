package scenario_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bench/internal/scenario"
)

// The goal is judged against the peer of the highest goodput, not against
// the best of each column: a peer that starves the downstream has a low
// p99 that no one would pick it for.
func TestAdaptiveGoalsJudgeAgainstThePeerOfTheHighestGoodput(t *testing.T) {
	subjects := []scenario.AdaptiveSubject{{Name: "sluice X"}, {Name: "starving"}, {Name: "serving"}}
	phases := []scenario.Phase{{Servers: 100, Dur: 2 * time.Second, Skip: time.Second}}
	results := [][]scenario.PhaseResult{
		{{Settled: 100 * time.Millisecond, Goodput: 0.99, P99: 12 * time.Millisecond}},
		{{Settled: -1, Goodput: 0.2, P99: 11 * time.Millisecond}},
		{{Settled: -1, Goodput: 0.98, P99: 13 * time.Millisecond}},
	}
	got := scenario.AdaptiveGoals(subjects, phases, results)
	if want := "| sluice X | 100 | serving | yes | yes | +100 of 10000 | yes |"; !strings.Contains(got, want) {
		t.Errorf("want the row %q, got:\n%s", want, got)
	}
	results[0][0].Settled = -1 // never converged: not as fast even as a peer that never did
	got = scenario.AdaptiveGoals(subjects, phases, results)
	if want := "| sluice X | 100 | serving | **no** | yes | +100 of 10000 | yes |"; !strings.Contains(got, want) {
		t.Errorf("want the row %q, got:\n%s", want, got)
	}
}
