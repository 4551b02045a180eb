package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/sluicehq/sluice/cmd/sluice/internal/fit"
)

// Fit writes the outcome of a search: the goal, then a row per algorithm
// with its best configuration or why there is none, then the best of all.
func Fit(w io.Writer, run Run, goal fit.Goal, bests []fit.Best) error {
	var b strings.Builder
	trafficLine(&b, run)
	fmt.Fprintf(&b, "callers   %s\n", Waiting(goal.MaxWait))
	retryLine(&b, run)
	fmt.Fprintf(&b, "upstream  %v, never to be exceeded", goal.Upstream)
	if goal.Headroom > 0 {
		fmt.Fprintf(&b, "; with %d%% headroom, candidates are held to %v", goal.Headroom, goal.Judged())
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "goal      p99 wait at most %s\n\n", Duration(goal.P99))
	win := "max in " + Duration(goal.Upstream.Rate.Per)
	rows := [][]string{{"algorithm", "best", "admitted", "refused", "p99 wait", "max wait", win, "any traffic", "tried"}}
	for _, x := range bests {
		if x.Pick == nil {
			rows = append(rows, []string{string(x.Kind), fmt.Sprintf("none (%d exceeded the upstream, %d missed the goal)", x.Exceeding, x.Missing),
				"", "", "", "", "", "", count(int64(x.Tried))})
			continue
		}
		p := x.Pick
		anyTraffic := "no"
		if x.AnyTraffic {
			anyTraffic = "yes"
		}
		rows = append(rows, []string{string(x.Kind), p.Limit.String(), count(p.AdmittedUnits), count(p.RefusedUnits),
			Duration(p.P99), Duration(p.Max), count(p.MaxInWindow), anyTraffic, count(int64(x.Tried))})
	}
	Table(&b, rows, 2)
	b.WriteByte('\n')
	if top := fit.Overall(bests); top != nil {
		share := 100 * float64(top.AdmittedUnits) / float64(max(top.OfferedUnits, 1))
		fmt.Fprintf(&b, "best: %v admits %.1f%% of the units offered, p99 wait %s\n", top.Limit, share, Duration(top.P99))
	} else {
		b.WriteString("best: none: no configuration tried stays within the upstream and meets the goal\n")
		if closest := fit.Closest(bests); len(closest) > 0 {
			b.WriteString("closest, the nearest of each algorithm:\n")
			rows := [][]string{}
			for _, m := range closest {
				rows = append(rows, []string{"  " + m.Limit.String(), m.Why(goal)})
			}
			Table(&b, rows, 2)
		}
	}
	b.WriteString(`"any traffic: yes" holds by the algorithm's own bound; "no" means only this traffic was shown to stay within the upstream.` + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}
