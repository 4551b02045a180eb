package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var downstreamArgs = []string{"simulate", "-limit", "pool:20", "-limit", "adaptive:vegas,ceiling=100", "-limit", "adaptive:aimd,ceiling=100",
	"-limit", "adaptive:gradient2,ceiling=100", "-downstream", "servers=20,service=10ms±1ms,queue=10,at=3s:servers=8,at=6s:servers=30",
	"-traffic", "poisson:2400/s", "-duration", "9s", "-seed", "3"}

// TestGoldenDownstream holds the table of pools in front of a downstream
// whose capacity falls and rises, as TestGolden holds the others.
func TestGoldenDownstream(t *testing.T) {
	code, out, errs := sluice(downstreamArgs...)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	golden(t, "simulate-downstream", out)
	if _, again, _ := sluice(downstreamArgs...); again != out {
		t.Error("a second run printed something else")
	}
}

func TestDownstreamChartsAdaptiveSVG(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := sluice(append(downstreamArgs, "-charts", dir)...)
	path := filepath.Join(dir, "adaptive.svg")
	if code != 0 || errs != "" || !strings.HasSuffix(out, "charts    "+path+"\n") {
		t.Fatalf("exit %d, stderr %q, stdout ends %q", code, errs, out[max(len(out)-80, 0):])
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "adaptive:vegas,floor=1,initial=20,ceiling=100") {
		t.Fatalf("%v: the chart names no pool", err)
	}
}

func TestDownstreamBadInputIsAUsageError(t *testing.T) {
	ds := "servers=10,service=10ms"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-limit", "pool:10"}, "need a -downstream"},
		{[]string{"-downstream", ds}, "at least one -limit adaptive"},
		{[]string{"-downstream", ds, "-limit", "pool:10", "-limit", "gcra:1/s"}, "-limit gcra:1/s,burst=1 is a rate limit"},
		{[]string{"-downstream", ds, "-limit", "pool:10", "-upstream", "1/s"}, "-upstream does not apply"},
		{[]string{"-downstream", ds, "-limit", "pool:10", "-format", "json"}, "-format json does not apply"},
		{[]string{"-downstream", ds, "-limit", "pool:10", "-series", "x.csv"}, "-series does not apply"},
		{[]string{"-downstream", ds, "-limit", "pool:10", "-retry", "max=2"}, "-retry does not apply"},
		{[]string{"-downstream", "servers=10,service=10ms,at=1s:servers=zero", "-limit", "pool:10"}, `at=1s: servers "zero"`},
		{[]string{"-downstream", ds, "-limit", "adaptive:vegas,alpha=9,beta=1"}, "must not exceed beta"},
	} {
		args := append([]string{"simulate", "-traffic", "steady:10/s"}, tc.args...)
		code, out, errs := sluice(args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d saying %q", tc.args, code, errs, exitUsage, tc.want)
		}
	}
}
