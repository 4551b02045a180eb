package main

import (
	"strconv"
	"strings"
	"testing"
)

// TestFitNeverPicksASizeBelowTheLargestCost: a burst, capacity or window
// limit below the largest cost refuses every request of that cost outright;
// with callers that wait, a fit admits them all.
func TestFitNeverPicksASizeBelowTheLargestCost(t *testing.T) {
	code, out, errs := sluice("fit", "-traffic", "poisson:2/s", "-traffic", "poisson:1/2s,cost=2", "-duration", "1m",
		"-upstream", "4/s", "-p99", "2s", "-headroom", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, k := range []string{"gcra", "token", "leaky", "sliding", "fixed"} {
		if r := row(t, out, k); len(r) > 3 && !strings.HasPrefix(r[1], "none") && r[3] != "0" {
			t.Errorf("%s: the pick %s refuses %s units: %v", k, r[1], r[3], r)
		}
	}
}

// TestFitLeavesHeadroom: by default a pick admits at most 95% of the
// upstream's limit in any of its windows.
func TestFitLeavesHeadroom(t *testing.T) {
	args := []string{"fit", "-traffic", "poisson:40/s", "-duration", "30s", "-upstream", "20/s", "-p99", "5s", "-max-wait", "0"}
	code, out, errs := sluice(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, k := range []string{"gcra", "sliding", "fixed"} {
		if got, _ := strconv.Atoi(column(t, out, k, "max in 1s")); got > 19 {
			t.Errorf("%s admits %d in a second, above 95%% of the upstream's 20", k, got)
		}
	}
	code, out, _ = sluice(append(args, "-headroom", "0")...)
	if code != 0 || column(t, out, "sliding", "max in 1s") != "20" {
		t.Errorf("-headroom 0: exit %d, sliding admits %s in a second, want all 20:\n%s", code, column(t, out, "sliding", "max in 1s"), out)
	}
}

// TestFitNamesTheClosestWhenNothingFits: a fit that finds nothing says which
// configurations came closest and by how much each misses.
func TestFitNamesTheClosestWhenNothingFits(t *testing.T) {
	code, out, _ := sluice("fit", "-traffic", "steady:20/s", "-duration", "20s", "-upstream", "10/s", "-p99", "10ms", "-algorithms", "gcra,fixed")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(out, "closest") || !strings.Contains(out, "p99 wait") || !strings.Contains(out, "over the goal") {
		t.Errorf("no closest configurations with what they miss by:\n%s", out)
	}
}
