package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/human"
	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

// Run describes the run the results come from, for the lines above the
// table.
type Run struct {
	Traffic  []string        // the patterns, as given
	Summary  traffic.Summary // what they made
	Seed     uint64
	MaxWait  time.Duration // sim.Forever for none
	Retry    sim.Retry     // the zero Retry: callers do not retry
	Upstream *spec.Limit
	Window   time.Duration
}

// trafficLine describes the traffic: its arrivals, its units when they
// differ, its length and, for a replay of instants, where it starts.
func trafficLine(b *strings.Builder, run Run) {
	s := run.Summary
	fmt.Fprintf(b, "traffic   %s: %d arrivals", strings.Join(run.Traffic, " + "), s.Arrivals)
	if s.Units != s.Arrivals {
		fmt.Fprintf(b, " (%d units)", s.Units)
	}
	fmt.Fprintf(b, " in %s", Duration(s.Duration))
	if !s.Origin.Equal(traffic.DefaultOrigin) {
		fmt.Fprintf(b, " from %s", s.Origin.Format(time.RFC3339Nano))
	}
	if len(s.Keys) > 1 {
		fmt.Fprintf(b, ", %d keys", len(s.Keys)-1)
	}
	fmt.Fprintf(b, ", seed %d\n", run.Seed)
}

// retryLine says how refused callers retry, if they do.
func retryLine(b *strings.Builder, run Run) {
	if run.Retry.Max > 0 {
		fmt.Fprintf(b, "retry     %v: a refused caller comes back; its wait counts from its first attempt\n", run.Retry)
	}
}

// trafficNotes say what the run's length left out or added.
func trafficNotes(run Run) []string {
	s := run.Summary
	var notes []string
	if s.Dropped > 0 {
		notes = append(notes, fmt.Sprintf("%d arrivals from %s were left out: they are at or after -duration %s (give -duration %s to keep them)",
			s.Dropped, Duration(s.FirstDropped), Duration(s.Duration), human.Exact((s.FirstDropped/time.Second+1)*time.Second)))
	}
	for i, name := range s.Cut {
		notes = append(notes, fmt.Sprintf("%s: its rows from %s on were left out, at or after -duration %s", name, Duration(s.CutAt[i]), Duration(s.Duration)))
	}
	if s.Extended {
		notes = append(notes, fmt.Sprintf("the run lasts %s, past the default %s, to hold every spike", Duration(s.Duration), Duration(traffic.DefaultDuration)))
	}
	return notes
}

// Simulation writes the header and one row per result. offered, admitted
// and refused count units, as the limits do; requests are counted beside
// them when costs are not all 1.
func Simulation(w io.Writer, run Run, results []*sim.Result) error {
	var b strings.Builder
	trafficLine(&b, run)
	fmt.Fprintf(&b, "callers   %s\n", Waiting(run.MaxWait))
	retryLine(&b, run)
	if run.Upstream != nil {
		fmt.Fprintf(&b, "upstream  %v\n", run.Upstream)
	}
	b.WriteByte('\n')
	win := "max in " + Duration(run.Window)
	units := run.Summary.Units != run.Summary.Arrivals
	header := []string{"limit", "offered", "admitted", "refused"}
	if units {
		header = append(header, "requests admitted")
	}
	retrying := run.Retry.Max > 0
	if retrying {
		header = append(header, "retries", "attempts/request", "peak retries")
	}
	perKey := false
	for _, r := range results {
		perKey = perKey || r.Limit.PerKey
	}
	if perKey {
		header = append(header, "keys")
	}
	header = append(header, "waited", "p50 wait", "p99 wait", "max wait", win)
	if run.Upstream != nil {
		header = append(header, "upstream")
	}
	rows := [][]string{header}
	for _, r := range results {
		row := []string{r.Limit.String(), count(r.OfferedUnits), count(r.AdmittedUnits), count(r.RefusedUnits)}
		if units {
			row = append(row, fmt.Sprintf("%d of %d", r.Admitted, r.Offered))
		}
		if retrying {
			row = append(row, retryCells(r)...)
		}
		if perKey {
			row = append(row, keysCell(r))
		}
		row = append(row, count(r.Waited), Percentile(r.P50, r.P50Stranded), Percentile(r.P99, r.P99Stranded), Percentile(r.Max, r.Stranded > 0), count(r.MaxInWindow))
		if run.Upstream != nil {
			row = append(row, Verdict(r))
		}
		rows = append(rows, row)
	}
	Table(&b, rows, 1)
	if notes := notes(run, results); len(notes) > 0 {
		b.WriteByte('\n')
		for _, n := range notes {
			b.WriteString("note: " + n + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// notes are the remarks under the table: what the traffic left out, the
// units, and each limit's edges.
func notes(run Run, results []*sim.Result) []string {
	notes := trafficNotes(run)
	if run.Summary.Units != run.Summary.Arrivals {
		notes = append(notes, "offered, admitted and refused count units (cost), as the limits do; waited counts requests")
	}
	for _, r := range results {
		if r.TooLarge > 0 {
			notes = append(notes, fmt.Sprintf("%v refused %d requests whose cost exceeds its capacity %d", r.Limit, r.TooLarge, r.Limit.Capacity()))
		}
		if d := run.Summary.Duration; r.End-d > d/100 {
			notes = append(notes, fmt.Sprintf("%v granted its last waiter at %v, after the traffic ended", r.Limit, Duration(r.End)))
		}
		if r.Stranded > 0 {
			notes = append(notes, fmt.Sprintf("%v left %d callers still waiting when the run stopped (neither admitted nor refused; in the percentiles as waits longer than any granted)", r.Limit, r.Stranded))
		}
		if len(r.TopRefused) > 0 {
			var top []string
			for _, k := range r.TopRefused {
				top = append(top, fmt.Sprintf("%s %d", keyName(run.Summary, k.Key), k.Refused))
			}
			notes = append(notes, fmt.Sprintf("%v refused most (requests): %s", r.Limit, strings.Join(top, ", ")))
		}
		if r.SeriesCut {
			notes = append(notes, fmt.Sprintf("%v: the charts stop after %d bins", r.Limit, sim.MaxBins))
		}
	}
	return notes
}

// retryCells are the retries, the amplification (attempts over the
// requests offered) and the most retries at one instant, and when.
func retryCells(r *sim.Result) []string {
	peak := "0"
	if r.PeakRetries > 0 {
		peak = fmt.Sprintf("%d at %s", r.PeakRetries, Duration(r.PeakRetriesAt))
	}
	return []string{count(r.Retries), fmt.Sprintf("%.2f", Amplification(r)), peak}
}

// Amplification is the attempts per request offered: 1 without retries.
func Amplification(r *sim.Result) float64 {
	if r.Offered == 0 {
		return 1
	}
	return float64(r.Offered+r.Retries) / float64(r.Offered)
}

// keysCell is a per-key limit's number of keys; "all" for a limit over
// all of them.
func keysCell(r *sim.Result) string {
	if !r.Limit.PerKey {
		return "all"
	}
	return count(int64(r.Keys))
}

// keyName names key number k; the arrivals without a key share "(none)".
func keyName(s traffic.Summary, k uint32) string {
	if int(k) < len(s.Keys) && k > 0 {
		return s.Keys[k]
	}
	return "(none)"
}

// Percentile is a wait percentile, or "stranded" when it falls among the
// callers still waiting at the end.
func Percentile(d time.Duration, stranded bool) string {
	if stranded {
		return "stranded"
	}
	return Duration(d)
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

// Duration formats d as every table does (human.Duration).
func Duration(d time.Duration) string { return human.Duration(d) }

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
