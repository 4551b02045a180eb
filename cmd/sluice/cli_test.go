package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from this run")

func sluice(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// golden compares got with testdata/name.golden, or rewrites it with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// TestGolden holds the tables of whole runs, one golden file each.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int
		args []string
	}{
		{"simulate-boundary", 0, []string{"simulate", "-limit", "fixed:100/1m", "-limit", "gcra:100/1m,burst=10", "-limit", "sliding:100/1m",
			"-traffic", "spike:100@59s,100@1m", "-traffic", "poisson:1/s", "-duration", "3m", "-upstream", "100/1m"}},
		{"simulate-five", 0, []string{"simulate", "-limit", "gcra:1000/s,burst=50", "-limit", "token:1000/s,50", "-limit", "leaky:1000/s,50",
			"-limit", "sliding:1000/s", "-limit", "fixed:1000/s", "-traffic", "poisson:1000/s", "-duration", "1m", "-max-wait", "100ms", "-upstream", "1000/s", "-seed", "7"}},
		{"simulate-nowait", 0, []string{"simulate", "-limit", "gcra:10/s,burst=5", "-limit", "sliding:10/s", "-traffic", "onoff:30/s,on=2s,off=3s,cost=1-3",
			"-duration", "30s", "-max-wait", "0", "-window", "2s"}},
		{"simulate-replay", 0, []string{"simulate", "-limit", "token:10/s,40", "-limit", "fixed:600/1m", "-traffic", "csv:testdata/traffic.csv",
			"-max-wait", "2s", "-upstream", "fixed:600/1m"}},
		{"simulate-stranded", 0, []string{"simulate", "-limit", "gcra:1/h", "-limit", "gcra:10/s,burst=3", "-traffic", "steady:5/s,cost=1-2", "-duration", "10s"}},
		{"fit-replay", 0, []string{"fit", "-traffic", "csv:testdata/traffic.csv", "-upstream", "30/s", "-p99", "2s", "-max-wait", "3s"}},
		{"simulate-perkey", 0, []string{"simulate", "-limit", "gcra:10/s,burst=5", "-limit", "gcra:2/s,burst=2,per=key", "-traffic", "poisson:20/s,keys=50,spread=zipf",
			"-duration", "1m", "-max-wait", "500ms", "-upstream", "30/s"}},
		{"simulate-storm", 0, []string{"simulate", "-limit", "fixed:10/s", "-limit", "gcra:10/s,burst=10", "-traffic", "spike:100@0s",
			"-traffic", "poisson:5/s", "-duration", "20s", "-max-wait", "0", "-retry", "max=3,jitter=none", "-upstream", "12/s"}},
		{"simulate-calm", 0, []string{"simulate", "-limit", "fixed:10/s", "-limit", "gcra:10/s,burst=10", "-traffic", "spike:100@0s",
			"-traffic", "poisson:5/s", "-duration", "20s", "-max-wait", "0", "-retry", "max=3,jitter=full", "-upstream", "12/s"}},
		{"fit-none", 1, []string{"fit", "-traffic", "steady:20/s", "-duration", "20s", "-upstream", "10/s", "-p99", "10ms", "-algorithms", "gcra,fixed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := sluice(tc.args...)
			if code != tc.code || errs != "" {
				t.Fatalf("exit %d, stderr %q; want %d and nothing", code, errs, tc.code)
			}
			golden(t, tc.name, out)
			// Deterministic: the same command, the same bytes.
			if _, again, _ := sluice(tc.args...); again != out {
				t.Error("a second run printed something else")
			}
		})
	}
}

func TestSeedMatters(t *testing.T) {
	args := []string{"simulate", "-limit", "gcra:5/s,burst=2", "-traffic", "poisson:5/s", "-duration", "1m", "-max-wait", "1s"}
	_, a, _ := sluice(append(args, "-seed", "1")...)
	_, b, _ := sluice(append(args, "-seed", "2")...)
	if a == b {
		t.Error("two seeds gave the same run")
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"help"}, {"--help"}, {"simulate", "-h"}, {"fit", "-h"}, {"help", "simulate"}, {"help", "fit"}} {
		code, out, errs := sluice(args...)
		if code != 0 || errs != "" || !strings.Contains(out, "Usage") {
			t.Errorf("sluice %v: exit %d, stdout %q..., stderr %q; want usage on stdout and 0", args, code, first(out), errs)
		}
	}
	_, out, _ := sluice("simulate", "-h")
	for _, f := range []string{"-limit", "-traffic", "-duration", "-seed", "-max-wait", "-upstream", "-window", "-bin", "-charts"} {
		if !strings.Contains(out, f) {
			t.Errorf("simulate -h does not mention %s", f)
		}
	}
}

func first(s string) string { return s[:min(len(s), 60)] }

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{nil, "Usage"},
		{[]string{"simulte"}, `unknown command "simulte"`},
		{[]string{"help", "nope"}, `no command "nope"`},
		{[]string{"simulate", "-traffic", "steady:1/s"}, "no limit: give at least one -limit"},
		{[]string{"simulate", "-limit", "gcra:1/s"}, "no traffic: give at least one -traffic"},
		{[]string{"simulate", "-limit", "gcra:1/s", "-traffic", "steady:1/s", "-retry", "max=3,jitter=some"}, `invalid value "max=3,jitter=some" for flag -retry: invalid retry "max=3,jitter=some": jitter=some: want none, full or equal`},
		{[]string{"simulate", "-limit", "gcra:1/s,capacity=3", "-traffic", "steady:1/s"}, `invalid value "gcra:1/s,capacity=3" for flag -limit: invalid limit "gcra:1/s,capacity=3": gcra takes rate=, burst= and per=key, not "capacity"`},
		{[]string{"simulate", "-limit", "gcra:1/s", "-traffic", "stedy:1/s"}, `unknown kind "stedy"`},
		{[]string{"simulate", "-limit", "gcra:1/s", "-traffic", "steady:1/s", "-duration", "forever"}, `"forever" is not a duration`},
		{[]string{"simulate", "-limit", "gcra:1/s", "-traffic", "steady:1/s", "-duration", "400d"}, "not a duration"},
		{[]string{"simulate", "-limit", "gcra:1/s", "-traffic", "steady:1/s", "-duration", "9000h"}, "longer than the simulator's limit"},
		{[]string{"simulate", "-limit", "gcra:1/s", "-traffic", "steady:1/s", "-max-wait", "-1s"}, "must not be negative"},
		{[]string{"simulate", "-limit", "gcra:1/s", "-traffic", "steady:1/s", "-max-wait", "soon"}, "neither a duration"},
		{[]string{"simulate", "-limit", "gcra:1/s", "-traffic", "steady:1/s", "-bin", "0s"}, "must be positive"},
		{[]string{"simulate", "-limit", "gcra:1/s", "-traffic", "steady:1/s", "-bin", "1us"}, "use a wider -bin"},
		{[]string{"simulate", "-limit", "gcra:1/s", "-traffic", "steady:1/s", "-upstream", "100"}, "for flag -upstream"},
		{[]string{"simulate", "-limit", "gcra:1/s", "-traffic", "steady:1/s", "extra"}, `unexpected argument "extra"`},
		{[]string{"simulate", "-nope"}, "flag provided but not defined: -nope"},
		{[]string{"fit", "-traffic", "steady:1/s", "-p99", "1s"}, "no upstream"},
		{[]string{"fit", "-traffic", "steady:1/s", "-upstream", "1/s"}, "no goal: give -p99"},
		{[]string{"fit", "-upstream", "1/s", "-p99", "1s"}, "no traffic"},
		{[]string{"fit", "-traffic", "steady:1/s", "-upstream", "1/s", "-p99", "-1s"}, "must not be negative"},
		{[]string{"fit", "-traffic", "steady:1/s", "-upstream", "1/s", "-p99", "1s", "-algorithms", "gcra,bucket"}, `unknown algorithm "bucket"`},
	} {
		code, out, errs := sluice(tc.args...)
		if code != 2 || !strings.Contains(errs, tc.says) {
			t.Errorf("sluice %q: exit %d, stderr %q; want 2 and a message saying %q", tc.args, code, errs, tc.says)
		}
		if out != "" {
			t.Errorf("sluice %q printed %q on stdout", tc.args, first(out))
		}
	}
}

func TestRunFailures(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"simulate", "-limit", "gcra:1/s", "-traffic", "csv:testdata/missing.csv"}, "missing.csv"},
		{[]string{"simulate", "-limit", "gcra:1/s", "-traffic", "steady:1/ns", "-duration", "1h"}, "exceed the simulator's limit"},
		{[]string{"fit", "-traffic", "csv:testdata/missing.csv", "-upstream", "1/s", "-p99", "1s"}, "missing.csv"},
	} {
		code, _, errs := sluice(tc.args...)
		if code != 1 || !strings.Contains(errs, tc.says) {
			t.Errorf("sluice %q: exit %d, stderr %q; want 1 and %q", tc.args, code, errs, tc.says)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("1\n2,zero\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := sluice("simulate", "-limit", "gcra:1/s", "-traffic", "csv:"+bad); code != 1 || !strings.Contains(errs, "bad.csv:2: cost") {
		t.Errorf("a bad csv: exit %d, %q", code, errs)
	}
}

func TestCharts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errs := sluice("simulate", "-limit", "fixed:10/s", "-limit", "gcra:10/s,burst=2", "-traffic", "poisson:12/s", "-duration", "20s", "-charts", dir)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, f := range []string{"rates.png", "rates.svg", "waits.png", "waits.svg"} {
		path := filepath.Join(dir, f)
		if st, err := os.Stat(path); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
		if !strings.Contains(out, path) {
			t.Errorf("the output does not name %s", path)
		}
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := sluice("simulate", "-limit", "gcra:1/s", "-traffic", "steady:1/s", "-charts", filepath.Join(file, "x")); code != 1 || errs == "" {
		t.Errorf("charts into a file's path: exit %d, %q", code, errs)
	}
}
