package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestKeyFacts checks what the program's table is there to show.
func TestKeyFacts(t *testing.T) {
	r, err := simulate()
	if err != nil {
		t.Fatal(err)
	}
	gcra, tb, lb := r.index("GCRA"), r.index("TokenBucket"), r.index("LeakyBucket")
	sw, fw := r.index("SlidingWindow"), r.index("FixedWindow")

	// The steady load is exactly the limit: everyone admits all of it.
	for i, name := range r.names {
		if got := r.admittedIn(i, 0, 2*time.Second); got != 20 {
			t.Errorf("%s admitted %d of the 20 steady requests", name, got)
		}
	}

	// The fixed window lets 2×limit through within 50ms around its boundary.
	if got := r.admittedIn(fw, boundary-50*time.Millisecond, boundary+time.Nanosecond); got != 2*limit {
		t.Errorf("FixedWindow admitted %d around the boundary, want %d", got, 2*limit)
	}
	// It never exceeds the limit within one of its (epoch-aligned) windows.
	for s := time.Duration(0); s < slots*slot; s += window {
		if got := r.admittedIn(fw, s, s+window); got > limit {
			t.Errorf("FixedWindow admitted %d in the window starting at %v", got, s)
		}
	}

	// The sliding window never admits more than the limit in any window.
	if got := r.busiestWindow(sw); got > limit {
		t.Errorf("SlidingWindow admitted %d within one window", got)
	}
	if got := r.admittedIn(sw, boundary-50*time.Millisecond, boundary+time.Nanosecond); got != limit {
		t.Errorf("SlidingWindow admitted %d around the boundary, want %d", got, limit)
	}

	// GCRA: the burst at 2.95s, then one per slot while overloaded.
	if got := r.admittedIn(gcra, boundary-50*time.Millisecond, boundary); got != limit {
		t.Errorf("GCRA admitted %d of the first burst, want %d", got, limit)
	}
	for s := int(boundary/slot) + 1; s < slots; s++ {
		if r.admitted[gcra][s] != 1 {
			t.Errorf("GCRA admitted %d in slot %d, want 1: it paces", r.admitted[gcra][s], s)
		}
	}

	// The bucket family admits the same requests.
	for _, i := range []int{tb, lb} {
		if r.admitted[i] != r.admitted[gcra] {
			t.Errorf("%s admitted differently from GCRA", r.names[i])
		}
	}

	want := map[string]int{"GCRA": 49, "TokenBucket": 49, "LeakyBucket": 49, "SlidingWindow": 40, "FixedWindow": 50}
	for i, name := range r.names {
		if r.total(i) != want[name] {
			t.Errorf("%s admitted %d in all, want %d", name, r.total(i), want[name])
		}
	}
}

// TestOutput runs the program's output path and checks the table's shape.
func TestOutput(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"slot   offered   GCRA  TokenBucket  LeakyBucket  SlidingWindow  FixedWindow",
		"2.9s        20     10           10           10             10           10",
		"3.0s        20      0            0            0              0           10",
		"total       98     49           49           49             40           50",
		"FixedWindow admits 20 between 2.95s and 3.00s",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if rows := strings.Count(text, "\n"); rows < slots+5 {
		t.Errorf("only %d lines of output", rows)
	}
}
