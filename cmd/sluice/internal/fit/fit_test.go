package fit_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/cmd/sluice/internal/fit"
	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

func arrivals(t *testing.T, d time.Duration, specs ...string) []traffic.Arrival {
	t.Helper()
	var ps []traffic.Pattern
	for _, s := range specs {
		p, err := traffic.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	a, _, err := traffic.Generate(ps, d, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func upstream(t *testing.T, s string) spec.Limit {
	t.Helper()
	l, err := spec.ParseUpstream(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// check re-runs a pick in full and holds it to the goal.
func check(t *testing.T, a []traffic.Arrival, goal fit.Goal, b fit.Best) {
	t.Helper()
	if b.Pick == nil {
		return
	}
	res, err := sim.Run(a, sim.Config{Limit: b.Pick.Limit, MaxWait: goal.MaxWait, Upstream: &goal.Upstream})
	if err != nil {
		t.Fatal(err)
	}
	if res.Exceeded != 0 || res.P99 > goal.P99 || res.Stranded != 0 || res.AdmittedUnits != b.Pick.AdmittedUnits {
		t.Errorf("%s: the pick %v exceeds %d times, p99 %v (goal %v), %d stranded", b.Kind, b.Pick.Limit, res.Exceeded, res.P99, goal.P99, res.Stranded)
	}
	if b.Pick.Limit.Kind != b.Kind {
		t.Errorf("the pick for %s is a %s", b.Kind, b.Pick.Limit.Kind)
	}
}

func TestSearch(t *testing.T) {
	a := arrivals(t, time.Minute, "poisson:8/s", "spike:25@20s,25@40.5s")
	goal := fit.Goal{Upstream: upstream(t, "10/s"), P99: 3 * time.Second, MaxWait: sim.Forever, Duration: time.Minute}
	bests, err := fit.Search(fit.InMemory(a), goal, spec.Kinds)
	if err != nil {
		t.Fatal(err)
	}
	if len(bests) != len(spec.Kinds) {
		t.Fatalf("%d results for %d kinds", len(bests), len(spec.Kinds))
	}
	for _, b := range bests {
		if b.Pick == nil && b.Kind != spec.Fixed {
			t.Errorf("%s: no pick (%d tried, %d exceeding, %d missing)", b.Kind, b.Tried, b.Exceeding, b.Missing)
		}
		check(t, a, goal, b)
	}
	// The fixed window must halve its limit to be safe across boundaries,
	// and the spikes then wait longer than the goal.
	if f := bests[4]; f.Pick != nil || f.Missing == 0 {
		t.Errorf("fixed: picked %v (%d missing), want none to meet a 3s p99", f.Pick, f.Missing)
	}
	// A sliding window of the upstream's own size and limit cannot exceed
	// it, and keeps every caller: it is the sliding pick, and safe for any
	// traffic.
	if s := bests[3]; s.Pick.Limit.String() != "sliding:10/s" || !s.AnyTraffic || s.Pick.Admitted != int64(len(a)) {
		t.Errorf("sliding: picked %v (any traffic %v, admitted %d of %d), want sliding:10/s", s.Pick.Limit, s.AnyTraffic, s.Pick.Admitted, len(a))
	}
	// GCRA, token and leaky buckets admit alike: the same pick for each.
	g, tk, lk := bests[0].Pick, bests[1].Pick, bests[2].Pick
	if g.Limit.Rate != tk.Limit.Rate || g.Limit.Size != tk.Limit.Size || g.Limit.Rate != lk.Limit.Rate || g.Limit.Size != lk.Limit.Size {
		t.Errorf("paced picks differ: %v, %v, %v", g.Limit, tk.Limit, lk.Limit)
	}
	if top := fit.Overall(bests); top == nil || top.AdmittedUnits < g.AdmittedUnits || top.AdmittedUnits < bests[3].Pick.AdmittedUnits {
		t.Errorf("Overall = %v, not the best", top)
	}
	again, err := fit.Search(fit.InMemory(a), goal, spec.Kinds)
	if err != nil {
		t.Fatal(err)
	}
	for i := range bests {
		if (again[i].Pick == nil) != (bests[i].Pick == nil) || again[i].Tried != bests[i].Tried ||
			(again[i].Pick != nil && again[i].Pick.Limit != bests[i].Pick.Limit) {
			t.Errorf("%s: a second search differs", bests[i].Kind)
		}
	}
}

// TestSearchIsBestOfGrid: on a small upstream, simulating every size of
// every coarse rate and window finds nothing better than the search.
func TestSearchIsBestOfGrid(t *testing.T) {
	a := arrivals(t, 30*time.Second, "poisson:9/s", "spike:15@10s")
	goal := fit.Goal{Upstream: upstream(t, "10/s"), P99: 400 * time.Millisecond, MaxWait: time.Second, Duration: 30 * time.Second}
	bests, err := fit.Search(fit.InMemory(a), goal, []spec.Kind{spec.GCRA, spec.Fixed})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bests {
		check(t, a, goal, b)
		var best int64
		var bestLimit spec.Limit
		for _, l := range grid(b.Kind, goal.Upstream) {
			res, err := sim.Run(a, sim.Config{Limit: l, MaxWait: goal.MaxWait, Upstream: &goal.Upstream})
			if err != nil {
				t.Fatal(err)
			}
			if res.Exceeded == 0 && res.P99 <= goal.P99 && res.AdmittedUnits > best {
				best, bestLimit = res.AdmittedUnits, l
			}
		}
		got := int64(0)
		if b.Pick != nil {
			got = b.Pick.AdmittedUnits
		}
		if got < best {
			t.Errorf("%s: the search admits %d (%v), the coarse grid %d (%v)", b.Kind, got, b.Pick, best, bestLimit)
		}
	}
}

func grid(k spec.Kind, up spec.Limit) []spec.Limit {
	var out []spec.Limit
	if k.Paced() {
		for _, pct := range fit.Fractions {
			for size := int64(1); size <= up.Capacity(); size++ {
				out = append(out, spec.Limit{Kind: k, Rate: algorithms.Rate{Count: up.Rate.Count * pct, Per: up.Rate.Per * 100}, Size: size})
			}
		}
		return out
	}
	for _, div := range fit.Divisions {
		for n := int64(1); n <= up.Capacity(); n++ {
			out = append(out, spec.Limit{Kind: k, Rate: algorithms.Rate{Count: n, Per: up.Rate.Per / time.Duration(div)}})
		}
	}
	return out
}

func TestSearchNone(t *testing.T) {
	// Twice the upstream's rate, callers who wait for ever, and a p99 goal
	// of 10 ms: whatever keeps within the upstream makes them wait longer.
	a := arrivals(t, 20*time.Second, "steady:20/s")
	goal := fit.Goal{Upstream: upstream(t, "10/s"), P99: 10 * time.Millisecond, MaxWait: sim.Forever, Duration: 20 * time.Second}
	bests, err := fit.Search(fit.InMemory(a), goal, spec.Kinds)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bests {
		if b.Pick != nil || b.Missing == 0 || b.Tried == 0 {
			t.Errorf("%s: picked %v (%d tried, %d missing); want none", b.Kind, b.Pick, b.Tried, b.Missing)
		}
	}
	if fit.Overall(bests) != nil {
		t.Error("Overall found a pick where none meets the goal")
	}
	// Costs above anything the upstream admits at once: every candidate
	// refuses them all, and a limit that admits nothing is no pick.
	big := arrivals(t, 5*time.Second, "steady:1/s,cost=20")
	bests, err = fit.Search(fit.InMemory(big), fit.Goal{Upstream: upstream(t, "10/s"), P99: time.Hour, MaxWait: sim.Forever}, []spec.Kind{spec.GCRA})
	if err != nil {
		t.Fatal(err)
	}
	if bests[0].Pick != nil {
		t.Errorf("costs of 20 through an upstream of 10: picked %v", bests[0].Pick.Limit)
	}
}

func TestSearchErrors(t *testing.T) {
	if _, err := fit.Search(fit.InMemory(nil), fit.Goal{}, spec.Kinds); err == nil {
		t.Error("Search without an upstream succeeded")
	}
	if _, err := fit.Search(fit.InMemory(nil), fit.Goal{Upstream: upstream(t, "10/s"), P99: -1}, spec.Kinds); err == nil {
		t.Error("Search with a negative goal succeeded")
	}
	if _, err := fit.Search(fit.InMemory(nil), fit.Goal{Upstream: upstream(t, "10/s")}, []spec.Kind{"nope"}); err == nil {
		t.Error("Search of an unknown kind succeeded")
	}
}

func TestGuaranteed(t *testing.T) {
	for _, tc := range []struct {
		limit, upstream string
		want            bool
	}{
		{"sliding:100/1m", "sliding:100/1m", true},
		{"sliding:50/30s", "sliding:100/1m", true},
		{"sliding:51/30s", "sliding:100/1m", false},
		{"fixed:100/1m", "sliding:100/1m", false}, // 200 across a boundary
		{"fixed:50/1m", "sliding:100/1m", true},
		{"fixed:50/1m", "fixed:100/1m", true},
		{"gcra:1/s,burst=41", "sliding:100/1m", true}, // 41 + 59 in any [t, t+1m)
		{"gcra:1/s,burst=42", "sliding:100/1m", false},
		{"gcra:9/s,burst=5", "gcra:10/s,burst=5", true},
		{"token:10/s,5", "leaky:10/s,5", true},
		{"gcra:11/s,burst=5", "gcra:10/s,burst=5", false},
		{"gcra:9/s,burst=6", "gcra:10/s,burst=5", false},
		{"sliding:1/s", "gcra:10/s,burst=5", false}, // not claimed
	} {
		l, err := spec.Parse(tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got := fit.Guaranteed(l, upstream(t, tc.upstream)); got != tc.want {
			t.Errorf("Guaranteed(%s, %s) = %v, want %v", tc.limit, tc.upstream, got, tc.want)
		}
	}
}

func TestSearchNamesAKindOnce(t *testing.T) {
	a := arrivals(t, 10*time.Second, "poisson:5/s")
	goal := fit.Goal{Upstream: upstream(t, "10/s"), P99: time.Second, MaxWait: sim.Forever}
	bests, err := fit.Search(fit.InMemory(a), goal, []spec.Kind{spec.GCRA, spec.Fixed, spec.GCRA})
	if err != nil {
		t.Fatal(err)
	}
	if len(bests) != 2 || bests[0].Kind != spec.GCRA || bests[1].Kind != spec.Fixed {
		t.Errorf("searched %v, want gcra and fixed once each", bests)
	}
}
