package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
)

// Run describes the run the results come from, for the lines above the
// table.
type Run struct {
	Traffic  []string      // the patterns, as given
	Arrivals int           // how many they made
	Duration time.Duration // of the traffic
	Seed     uint64
	MaxWait  time.Duration // sim.Forever for none
	Upstream *spec.Limit
	Window   time.Duration
}

// Simulation writes the header and one row per result.
func Simulation(w io.Writer, run Run, results []*sim.Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "traffic   %s: %d arrivals in %v, seed %d\n", strings.Join(run.Traffic, " + "), run.Arrivals, run.Duration, run.Seed)
	fmt.Fprintf(&b, "callers   %s\n", Waiting(run.MaxWait))
	if run.Upstream != nil {
		fmt.Fprintf(&b, "upstream  %v\n", run.Upstream)
	}
	b.WriteByte('\n')
	win := "max in " + Duration(run.Window)
	header := []string{"limit", "offered", "admitted", "refused", "waited", "p50 wait", "p99 wait", "max wait", win}
	if run.Upstream != nil {
		header = append(header, "upstream")
	}
	rows := [][]string{header}
	var notes []string
	for _, r := range results {
		row := []string{r.Limit.String(), count(r.Offered), count(r.Admitted), count(r.Refused), count(r.Waited),
			Duration(r.P50), Duration(r.P99), Duration(r.Max), count(r.MaxInWindow)}
		if run.Upstream != nil {
			row = append(row, Verdict(r))
		}
		rows = append(rows, row)
		if r.TooLarge > 0 {
			notes = append(notes, fmt.Sprintf("%v refused %d requests whose cost exceeds its capacity %d", r.Limit, r.TooLarge, r.Limit.Capacity()))
		}
		if r.End-run.Duration > run.Duration/100 {
			notes = append(notes, fmt.Sprintf("%v granted its last waiter at %v, after the traffic ended", r.Limit, Duration(r.End)))
		}
		if r.Stranded > 0 {
			notes = append(notes, fmt.Sprintf("%v left %d callers still waiting when the run stopped (neither admitted nor refused)", r.Limit, r.Stranded))
		}
		if r.SeriesCut {
			notes = append(notes, fmt.Sprintf("%v: the charts stop after %d bins", r.Limit, sim.MaxBins))
		}
	}
	Table(&b, rows, 1)
	if len(notes) > 0 {
		b.WriteByte('\n')
		for _, n := range notes {
			b.WriteString("note: " + n + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Waiting describes a maximum wait.
func Waiting(maxWait time.Duration) string {
	switch {
	case maxWait < 0:
		return "wait as long as it takes (no maximum wait)"
	case maxWait == 0:
		return "never wait: refused unless admitted on arrival"
	}
	return "wait at most " + Duration(maxWait) + ", refused at once when the predicted grant is later"
}

// Verdict says whether the upstream would have refused any admission.
func Verdict(r *sim.Result) string {
	if r.Exceeded == 0 {
		return "never exceeded"
	}
	return fmt.Sprintf("exceeded %d× from %s", r.Exceeded, Duration(r.FirstExceeded))
}

func count(n int64) string { return strconv.FormatInt(n, 10) }

// Duration formats d to three significant digits, whole seconds from a
// minute on: 0s, 417µs, 97.8ms, 1.25s, 2m53s, 1m, 1h, 1h30m.
func Duration(d time.Duration) string {
	if d <= 0 {
		return d.String()
	}
	unit := time.Duration(1)
	for v := d; v >= 1000; v /= 10 {
		unit *= 10
	}
	// Whole seconds need no more rounding: 2m53s, not 2m53.4s.
	if d >= time.Minute {
		unit = max(unit, time.Second)
	}
	s := d.Round(unit).String()
	// 1m, 1h and 1h30m rather than 1m0s, 1h0m0s and 1h30m0s.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Table writes rows as columns two spaces apart, the first left columns
// left-aligned (names) and the others right-aligned (numbers).
func Table(b *strings.Builder, rows [][]string, left int) {
	var width []int
	for _, row := range rows {
		for i, cell := range row {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(cell)))
		}
	}
	for _, row := range rows {
		var line strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", width[i]-len([]rune(cell)))
			switch {
			case i == 0:
				line.WriteString(cell + pad)
			case i < left:
				line.WriteString("  " + cell + pad)
			default:
				line.WriteString("  " + pad + cell)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}
