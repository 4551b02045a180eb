package main

import (
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/bench/internal/scenario"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tiny is a configuration that runs every section in well under a second:
// it checks that the command works end to end, not what it measures.
func tiny(only string) config {
	w := scenario.WaitSpec{Goroutines: 50, Rate: algorithms.PerSecond(50_000), Burst: 10, Permits: 500}
	return config{
		d: time.Millisecond, count: 1, heavy: 1, only: regexp.MustCompile(only),
		wait:  []waitCase{{"tiny", w}},
		storm: stormCase{"tiny", scenario.StormSpec{Waiters: 100, Cancelled: 50, Rate: algorithms.PerSecond(10_000), Burst: 1, Seed: 1}},
		heapN: 100,
	}
}

func TestRunPrintsEveryTable(t *testing.T) {
	var out, progress strings.Builder
	if err := run(tiny(""), &out, &progress); err != nil {
		t.Fatalf("run: %v\nprogress:\n%s", err, progress.String())
	}
	report := out.String()
	for _, want := range []string{
		"# sluice side by side", "Machine:",
		"## Non-blocking decision", "| allowed | 32 |", "| denied | 1 |",
		"## Non-blocking decision at the rates users type", "| 30/s |", "| 1,140,000/min |", "| fixed window |",
		"## Acquire through the owner goroutine", "| 64 |",
		"## Wait path", "| tiny | sluice |", "| tiny | x/time/rate |", "| tiny | uber ratelimit |", "CPU per permit ≤ 0.7× x/time/rate",
		"## Cancellation storm", "| sluice |", "| x/time/rate |",
		"## Heap per blocked waiter", "| plain channel |", "(baseline)",
		"## Concurrency pool", "## Adaptive concurrency", "| sluice AdaptivePool |", "## Circuit breaker", "| half failing | 32 |", "## Retry budget", "heap per budget",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(report, "| error |") {
		t.Errorf("report has an error cell:\n%s", report)
	}
	// Every table row has as many cells as its header.
	var cols int
	for _, line := range strings.Split(report, "\n") {
		if !strings.HasPrefix(line, "|") {
			cols = 0
			continue
		}
		n := strings.Count(line, " | ") + 1
		if cols == 0 {
			cols = n
		} else if n != cols {
			t.Errorf("row has %d cells, header %d: %s", n, cols, line)
		}
	}
	if !strings.Contains(progress.String(), "run 1/1") {
		t.Errorf("no progress on stderr:\n%s", progress.String())
	}
}

func TestOnlySelectsSections(t *testing.T) {
	var out strings.Builder
	if err := run(tiny("^budget$"), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "## Retry budget") || strings.Contains(out.String(), "## Wait path") {
		t.Errorf("-only budget printed:\n%s", out.String())
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-quick"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.d != 20*time.Millisecond || cfg.count != 3 || cfg.heavy != 2 {
		t.Errorf("-quick: d %v count %d heavy %d, want 20ms 3 2", cfg.d, cfg.count, cfg.heavy)
	}
	full, _ := parseFlags(nil, io.Discard)
	if cfg.wait[0].spec.Permits*10 != full.wait[0].spec.Permits {
		t.Errorf("-quick permits %d, full %d: want a tenth", cfg.wait[0].spec.Permits, full.wait[0].spec.Permits)
	}
	cfg, err = parseFlags([]string{"-quick", "-d", "5ms", "-count", "1"}, io.Discard)
	if err != nil || cfg.d != 5*time.Millisecond || cfg.count != 1 || cfg.heavy != 1 {
		t.Errorf("explicit flags under -quick: %+v, %v", cfg, err)
	}
	for _, bad := range [][]string{{"-count", "0"}, {"-d", "0s"}, {"-only", "("}, {"-nope"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) succeeded", bad)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
