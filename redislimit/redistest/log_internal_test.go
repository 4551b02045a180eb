package redistest

import (
	"context"
	"strings"
	"testing"
)

// A quiet log keeps the latest lines, within its bound, and writes them
// with how many there were.
func TestAQuietLogKeepsTheLatestLines(t *testing.T) {
	l := &keptLog{}
	var empty strings.Builder
	l.dump(&empty)
	if empty.Len() != 0 {
		t.Fatalf("an empty log wrote %q", empty.String())
	}
	for i := range keptLines + 5 {
		l.Printf(context.Background(), "dial %d: connection refused", i)
	}
	var out strings.Builder
	l.dump(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != keptLines+1 {
		t.Fatalf("%d lines written, want a heading and %d", len(lines), keptLines)
	}
	if want := "go-redis logged 1005 lines during the failed run (the last 1000 follow):"; lines[0] != want {
		t.Errorf("heading %q, want %q", lines[0], want)
	}
	if lines[1] != "go-redis: dial 5: connection refused" || lines[keptLines] != "go-redis: dial 1004: connection refused" {
		t.Errorf("kept %q .. %q, want dials 5 to 1004", lines[1], lines[keptLines])
	}
}
