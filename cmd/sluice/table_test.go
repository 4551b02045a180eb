package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTableCountsUnits: limits count units (cost), so do the table's
// offered, admitted and refused columns; requests are counted beside them.
func TestTableCountsUnits(t *testing.T) {
	code, out, errs := sluice("simulate", "-limit", "gcra:10/s,burst=10", "-traffic", "steady:5/s,cost=4", "-duration", "10s", "-max-wait", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lim := "gcra:10/s,burst=10"
	if off := column(t, out, lim, "offered"); off != "200" {
		t.Errorf("offered %s, want 200 units (50 requests of 4):\n%s", off, out)
	}
	adm, ref := column(t, out, lim, "admitted"), column(t, out, lim, "refused")
	if adm+"+"+ref != "108+92" { // 10 + 10/s for 10s: 27 requests of 4
		t.Errorf("admitted %s and refused %s, want 108 and 92 units:\n%s", adm, ref, out)
	}
}

// TestPercentilesCountCallersStillWaiting: callers still waiting when the
// run stops are in the wait percentiles, as waits longer than any granted.
func TestPercentilesCountCallersStillWaiting(t *testing.T) {
	code, out, errs := sluice("simulate", "-limit", "gcra:1/h", "-traffic", "steady:1/s", "-duration", "10s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if p50 := column(t, out, "gcra:1/h,burst=1", "p50 wait"); p50 == "0s" {
		t.Errorf("p50 wait 0s with 9 of 10 callers never granted:\n%s", out)
	}
}

// TestDurationsPrintOneWay: every duration printed is in one form, "1m"
// rather than "1m0s" beside "60s".
func TestDurationsPrintOneWay(t *testing.T) {
	_, out, _ := sluice("simulate", "-limit", "fixed:100/1m", "-traffic", "poisson:2/s", "-duration", "3m", "-upstream", "100/1m", "-max-wait", "1m")
	for _, odd := range []string{"m0s", "h0m", "60s"} {
		if strings.Contains(out, odd) {
			t.Errorf("the output holds %q:\n%s", odd, out)
		}
	}
}

// TestFixedWindowsAlignToTheEpochOnReplays: a replay of RFC 3339 instants
// keeps them, so a fixed window counts the calendar windows the library's
// FixedWindow would on those instants, not windows from the first row.
func TestFixedWindowsAlignToTheEpochOnReplays(t *testing.T) {
	var b strings.Builder
	for range 10 {
		b.WriteString("2025-03-01T12:00:30Z\n")
	}
	for range 10 {
		b.WriteString("2025-03-01T12:01:00Z\n")
	}
	path := filepath.Join(t.TempDir(), "log.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := sluice("simulate", "-limit", "fixed:10/1m", "-traffic", "csv:"+path, "-max-wait", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if got := column(t, out, "fixed:10/m", "admitted"); got != "20" {
		t.Errorf("admitted %s, want 20: 10 in the minute from 12:00, 10 in the minute from 12:01:\n%s", got, out)
	}
}
