package report_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/report"
	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
)

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {-time.Second, "-1s"}, {417, "417ns"}, {417_400, "417µs"}, {97_828_546, "97.8ms"},
		{599_999_999, "600ms"}, {1_250_400_000, "1.25s"}, {59_999_000_000, "1m"}, {173_400_000_000, "2m53s"},
		{time.Minute, "1m"}, {time.Hour, "1h"}, {90 * time.Minute, "1h30m"}, {time.Hour + time.Second, "1h"}, {time.Hour + 10*time.Minute, "1h10m"},
		{2*time.Minute + 50*time.Second, "2m50s"}, {10 * time.Minute, "10m"},
	} {
		if got := report.Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%d) = %q, want %q", int64(tc.d), got, tc.want)
		}
	}
}

func TestTable(t *testing.T) {
	var b strings.Builder
	report.Table(&b, [][]string{{"name", "kind", "n"}, {"a", "longer", "1"}, {"bbb", "x", "100"}, {"c", "only two"}}, 2)
	want := "" +
		"name  kind        n\n" +
		"a     longer      1\n" +
		"bbb   x         100\n" +
		"c     only two\n"
	if b.String() != want {
		t.Errorf("Table =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestVerdictAndWaiting(t *testing.T) {
	if got := report.Verdict(&sim.Result{}); got != "never exceeded" {
		t.Errorf("Verdict of none = %q", got)
	}
	if got := report.Verdict(&sim.Result{Exceeded: 3, FirstExceeded: 1500 * time.Millisecond}); got != "exceeded 3× from 1.5s" {
		t.Errorf("Verdict = %q", got)
	}
	for d, want := range map[time.Duration]string{sim.Forever: "no maximum", 0: "never wait", time.Second: "wait at most 1s"} {
		if got := report.Waiting(d); !strings.Contains(got, want) {
			t.Errorf("Waiting(%v) = %q, want it to say %q", d, got, want)
		}
	}
}
