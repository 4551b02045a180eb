package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
