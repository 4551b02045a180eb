package breaker_test

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/internal/testutil"
)

func failing(context.Context) error    { return errBoom }
func succeeding(context.Context) error { return nil }

// TestLoggerWritesOneLinePerTransition: opened at Warn, half-open and
// closed at Info, each with the name and the states, timed at the
// transition.
func TestLoggerWritesOneLinePerTransition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, logger := testutil.NewLogs()
		b, err := breaker.New(breaker.WithName("api"), breaker.WithConsecutiveFailures(2),
			breaker.WithOpenTimeout(time.Second), breaker.WithLogger(logger))
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		_ = b.Do(ctx, failing)
		_ = b.Do(ctx, failing) // opens
		time.Sleep(time.Second)
		_ = b.Do(ctx, succeeding) // half-open, then closed
		want := []struct{ level, msg, from, to string }{
			{"WARN", "sluice: breaker opened", "closed", "open"},
			{"INFO", "sluice: breaker half-open", "open", "half-open"},
			{"INFO", "sluice: breaker closed", "half-open", "closed"},
		}
		at := []time.Time{t0, t0.Add(time.Second), t0.Add(time.Second)}
		lines := logs.Lines(t)
		if len(lines) != len(want) {
			t.Fatalf("got %d lines, want %d: %v", len(lines), len(want), lines)
		}
		for i, w := range want {
			l := lines[i]
			if l["level"] != w.level || l["msg"] != w.msg || l["sluice.breaker.name"] != "api" ||
				l["sluice.breaker.state.from"] != w.from || l["sluice.breaker.state.to"] != w.to {
				t.Errorf("line %d = %v, want %+v", i, l, w)
			}
			if _, ok := l["transitions_dropped"]; ok {
				t.Errorf("line %d has transitions_dropped with nothing dropped: %v", i, l)
			}
			if got := l["time"]; got != at[i].Format(time.RFC3339Nano) {
				t.Errorf("line %d at %v, want %v", i, got, at[i])
			}
		}
	})
}

// TestLoggerWritesNoLineForCalls: a thousand calls in each state, and no
// line but the transitions'.
func TestLoggerWritesNoLineForCalls(t *testing.T) {
	logs, logger := testutil.NewLogs()
	b, err := breaker.New(breaker.WithLogger(logger), breaker.WithFailureRate(0.5, time.Minute, 10))
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		_ = b.Do(ctx, succeeding)
		_ = b.State()
		_ = b.Snapshot()
	}
	b.ForceOpen()
	for range 1000 {
		_ = b.Do(ctx, succeeding) // refused
	}
	if got := logs.Messages(t); len(got) != 1 || got[0] != "sluice: breaker opened" {
		t.Fatalf("lines = %q, want the one transition's", got)
	}
}

// TestLoggerSharesTheHooksDelivery: the lines follow the hook's order, and
// a transition the delivery dropped is counted on the next line, as in the
// hook's Dropped.
func TestLoggerSharesTheHooksDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, logger := testutil.NewLogs()
		var b *breaker.Breaker
		var seen []breaker.Transition
		hook := func(tr breaker.Transition) {
			seen = append(seen, tr)
			if len(seen) == 1 { // five transitions from within the hook: one is dropped
				b.Reset()
				b.ForceOpen()
				b.Reset()
				b.ForceOpen()
				b.Reset()
			}
		}
		var err error
		b, err = breaker.New(breaker.WithLogger(logger), breaker.WithOnTransition(hook))
		if err != nil {
			t.Fatal(err)
		}
		b.ForceOpen()
		lines := logs.Lines(t)
		if len(lines) != len(seen) || len(lines) != 5 {
			t.Fatalf("%d lines and %d hook calls, want 5 of each", len(lines), len(seen))
		}
		for i, tr := range seen {
			l := lines[i]
			if l["sluice.breaker.state.to"] != tr.To.String() || l["sluice.breaker.state.from"] != tr.From.String() {
				t.Errorf("line %d = %v, hook saw %+v", i, l, tr)
			}
			if d, _ := l["transitions_dropped"].(float64); int64(d) != tr.Dropped {
				t.Errorf("line %d dropped %v, hook saw %d", i, l["transitions_dropped"], tr.Dropped)
			}
		}
		if seen[1].Dropped != 1 {
			t.Errorf("the second transition delivered carries %d dropped, want 1", seen[1].Dropped)
		}
	})
}

// TestLoggerBelowItsLevelWritesNothing: a handler that takes Warn and
// above gets the opened line only.
func TestLoggerBelowItsLevelWritesNothing(t *testing.T) {
	logs, logger := testutil.NewLogsAt(slog.LevelWarn)
	b, err := breaker.New(breaker.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	b.ForceOpen()
	b.Reset()
	if got := logs.Messages(t); len(got) != 1 || got[0] != "sluice: breaker opened" {
		t.Fatalf("lines = %q, want the opened one only", got)
	}
}
