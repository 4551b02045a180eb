package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/sluicehq/sluice/internal/downstream"
)

// Downstream writes a run of pools in front of a modelled downstream: the
// traffic, the downstream (its canonical form), and for each pool a row per
// phase of the downstream and one for the whole run, then what its limit
// did.
func Downstream(w io.Writer, run Run, model string, results []*downstream.Result) error {
	var b strings.Builder
	trafficLine(&b, run)
	fmt.Fprintf(&b, "downstream %s\n", model)
	b.WriteString("callers   one request per arrival (cost and keys are not used); the pool sheds what it cannot admit\n")
	rows := [][]string{{"pool", "phase", "servers", "offered", "served", "goodput/s", "p50", "p99", "shed", "503"}}
	for _, r := range results {
		for i, p := range r.Phases {
			name := ""
			if i == 0 {
				name = r.Pool.Name
			}
			rows = append(rows, phaseRow(name, Duration(p.From)+"-"+Duration(p.To), fmt.Sprint(p.Servers), p, true))
		}
		if len(r.Phases) > 1 {
			rows = append(rows, phaseRow("", "all", "", r.Total(), false))
		}
	}
	b.WriteByte('\n')
	Table(&b, rows, 2)
	b.WriteByte('\n')
	for _, r := range results {
		fmt.Fprintf(&b, "%s: %s\n", r.Pool.Name, limitLine(r))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func phaseRow(name, phase, servers string, p downstream.PhaseResult, latency bool) []string {
	p50, p99 := "", ""
	if latency {
		p50, p99 = Duration(p.P50), Duration(p.P99)
	}
	return []string{name, phase, servers, count(p.Offered), count(p.Served), fmt.Sprintf("%.0f", p.Goodput()), p50, p99, count(p.Shed), count(p.Refused)}
}

// limitLine says where the limit went.
func limitLine(r *downstream.Result) string {
	if r.Pool.Controller == nil {
		return fmt.Sprintf("static limit %d", r.Pool.Initial)
	}
	last := r.Bins[len(r.Bins)-1].Limit
	return fmt.Sprintf("limit from %d to %d (highest %d), %d changes on %d samples", r.Pool.Initial, last, r.MaxLimit, r.Changes, r.Samples)
}
