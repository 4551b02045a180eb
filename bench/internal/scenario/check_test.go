package scenario_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bench/internal/scenario"
)

// naiveExcess checks every window, the way the bound is stated.
func naiveExcess(grants []int64, count int64, per time.Duration, b int64) int64 {
	best := int64(1 - b)
	for i := range grants {
		for j := i; j < len(grants); j++ {
			d := grants[j] - grants[i]
			bound := b + count*d/int64(per)
			best = max(best, int64(j-i+1)-bound)
		}
	}
	return best
}

func TestMaxExcessMatchesEveryWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		n := 1 + rng.IntN(40)
		grants := make([]int64, n)
		at := int64(0)
		for i := range grants {
			at += rng.Int64N(30)
			grants[i] = at
		}
		count := 1 + rng.Int64N(5)
		per := time.Duration(1 + rng.Int64N(40))
		b := 1 + rng.Int64N(4)
		got := scenario.MaxExcess(grants, count, per, b)
		want := naiveExcess(grants, count, per, b)
		if got != want {
			t.Fatalf("trial %d: MaxExcess(%v, %d/%v, b=%d) = %d, every window says %d", trial, grants, count, per, b, got, want)
		}
	}
}

func TestMaxExcessTimeline(t *testing.T) {
	const ms = int64(time.Millisecond)
	// 10/s with bursts of 2: two at once, then one every 100ms conforms.
	paced := []int64{0, 0, 100 * ms, 200 * ms, 300 * ms}
	if got := scenario.MaxExcess(paced, 10, time.Second, 2); got > 0 {
		t.Errorf("paced grants: excess %d, want <= 0", got)
	}
	// A late wake-up that grants three at once at 250ms: 3 > 2 + 0.
	bunched := []int64{0, 0, 250 * ms, 250 * ms, 250 * ms}
	if got := scenario.MaxExcess(bunched, 10, time.Second, 2); got != 1 {
		t.Errorf("bunched grants: excess %d, want 1", got)
	}
}

func TestFIFOViolations(t *testing.T) {
	tests := []struct {
		name           string
		arrival, grant []int64
		want           int
	}{
		{"in order", []int64{1, 2, 3}, []int64{1, 2, 3}, 0},
		{"last passes everyone", []int64{1, 2, 3}, []int64{2, 3, 1}, 2},
		{"one swap", []int64{1, 2, 3, 4}, []int64{1, 3, 2, 4}, 1},
		{"stamps in any slice order", []int64{3, 1, 2}, []int64{3, 1, 2}, 0},
	}
	for _, tt := range tests {
		if got := scenario.FIFOViolations(tt.arrival, tt.grant); got != tt.want {
			t.Errorf("%s: %d violations, want %d", tt.name, got, tt.want)
		}
	}
	// Against the definition, pair by pair.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		n := 1 + rng.IntN(30)
		arrival := rng.Perm(n)
		grant := rng.Perm(n)
		a, g := make([]int64, n), make([]int64, n)
		want := 0
		for i := range n {
			a[i], g[i] = int64(arrival[i]), int64(grant[i])
		}
		for i := range n {
			if slices.ContainsFunc(rangeN(n), func(j int) bool { return a[i] < a[j] && g[i] > g[j] }) {
				want++
			}
		}
		if got := scenario.FIFOViolations(a, g); got != want {
			t.Fatalf("FIFOViolations(%v, %v) = %d, want %d", a, g, got, want)
		}
	}
}

func rangeN(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func TestFIFOViolationsApart(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		n := 1 + rng.IntN(30)
		at, g := make([]int64, n), make([]int64, n)
		for i, p := range rng.Perm(n) {
			at[i], g[i] = rng.Int64N(50), int64(p)
		}
		apart := time.Duration(rng.Int64N(10))
		want := 0
		for i := range n {
			for j := range n {
				if at[j] > at[i]+int64(apart) && g[j] < g[i] {
					want++
					break
				}
			}
		}
		if got := scenario.FIFOViolationsApart(at, g, apart); got != want {
			t.Fatalf("FIFOViolationsApart(%v, %v, %v) = %d, want %d", at, g, apart, got, want)
		}
	}
	// Zero apart is the definition with arrival instants instead of numbers.
	if got := scenario.FIFOViolationsApart([]int64{0, 10, 20}, []int64{3, 1, 2}, 0); got != 1 {
		t.Errorf("got %d, want 1", got)
	}
	// An overtaker that arrived only 5ns later is noise at apart = 5ns.
	if got := scenario.FIFOViolationsApart([]int64{0, 5}, []int64{2, 1}, 5); got != 0 {
		t.Errorf("got %d, want 0", got)
	}
}
