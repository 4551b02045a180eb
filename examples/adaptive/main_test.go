package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/downstream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// once runs the scenario once for every test: it is deterministic.
var once = sync.OnceValues(simulate)

func run(t *testing.T) []*downstream.Result {
	t.Helper()
	results, err := once()
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// TestTableHasARowPerPhaseAndPool pins the table's shape: a header, then
// each of the three phases for each of the four pools, static first.
func TestTableHasARowPerPhaseAndPool(t *testing.T) {
	results := run(t)
	var b bytes.Buffer
	table(&b, results)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1+3*4 {
		t.Fatalf("%d lines, want 13:\n%s", len(lines), b.String())
	}
	for i, want := range []string{"C=100 static", "C=100 aimd", "C=100 vegas", "C=100 gradient2", "C=40 static", "C=150 gradient2"} {
		row := []int{1, 2, 3, 4, 5, 12}[i]
		if got := strings.Join(strings.Fields(lines[row])[:2], " "); got != want {
			t.Errorf("row %d starts %q, want %q", row, got, want)
		}
	}
}

// TestAdaptiveBeatsStaticAfterTheChange: when the capacity falls to 40 the
// adaptive pools shed at the pool what the static limit sends on to be
// refused by the downstream, and Vegas, which reads the queue from latency,
// keeps p99 below the static limit's; when it rises to 150 every adaptive
// pool serves more than the static limit can.
func TestAdaptiveBeatsStaticAfterTheChange(t *testing.T) {
	results := run(t)
	static := results[0]
	for _, r := range results[1:] {
		fell, rose := r.Phases[1], r.Phases[2]
		if fell.Refused*10 > static.Phases[1].Refused {
			t.Errorf("C=40: %s had %d refused by the downstream, static %d: want under a tenth", r.Pool.Name, fell.Refused, static.Phases[1].Refused)
		}
		if rose.Goodput() <= static.Phases[2].Goodput()*1.1 {
			t.Errorf("C=150: %s served %.0f/s, static %.0f/s: want 10%% more", r.Pool.Name, rose.Goodput(), static.Phases[2].Goodput())
		}
	}
	if vegas := results[2]; vegas.Phases[1].P99 >= static.Phases[1].P99 {
		t.Errorf("C=40: vegas p99 %v, static %v: want it lower", vegas.Phases[1].P99, static.Phases[1].P99)
	}
}

func TestWritesTheChart(t *testing.T) {
	results := run(t)
	path := filepath.Join(t.TempDir(), "c.svg")
	if err := write(path, results); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("<svg")) {
		t.Fatalf("%v; got %.40q", err, b)
	}
}
