package report

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"

	"github.com/sluicehq/sluice/cmd/sluice/internal/fit"
)

// FitSchema names the JSON document of a search; a change that removes or
// renames a field changes it (docs/simulator.md describes every field).
const FitSchema = "sluice.fit/v1"

// FitDocument is the JSON form of a search: what fit -format json prints.
type FitDocument struct {
	Header
	Upstream   string         `json:"upstream"`
	Headroom   int64          `json:"headroom_percent"`
	Judged     string         `json:"judged"` // the upstream less the headroom
	P99        int64          `json:"p99_goal_ns"`
	Algorithms []AlgorithmDoc `json:"algorithms"`
	Best       *string        `json:"best"` // null: nothing meets the goal
	Closest    []MissDoc      `json:"closest"`
}

// AlgorithmDoc is one algorithm's outcome.
type AlgorithmDoc struct {
	Algorithm  string    `json:"algorithm"`
	Best       *LimitDoc `json:"best"` // its pick's full run; null: none met the goal
	AnyTraffic bool      `json:"any_traffic"`
	Tried      int       `json:"tried"`
	Exceeding  int       `json:"exceeded"`
	Missing    int       `json:"missed"`
	Closest    []MissDoc `json:"closest"` // when there is no pick, nearest first
}

// MissDoc is a configuration that missed the goal and what it missed by.
type MissDoc struct {
	Limit string `json:"limit"`
	Why   string `json:"why"`
	// How far its p99 wait is over the goal, null when it exceeded the
	// upstream (then ExceededAt, its first excess, is set) or when Why
	// says otherwise.
	Over       *int64 `json:"p99_over_ns"`
	ExceededAt *int64 `json:"exceeded_at_ns"`
}

// NewFitDocument builds the document of a search.
func NewFitDocument(run Run, goal fit.Goal, bests []fit.Best) FitDocument {
	d := FitDocument{Header: header(FitSchema, run), Upstream: goal.Upstream.String(), Headroom: goal.Headroom,
		Judged: goal.Judged().String(), P99: int64(goal.P99), Algorithms: []AlgorithmDoc{}, Closest: []MissDoc{}}
	for _, b := range bests {
		a := AlgorithmDoc{Algorithm: string(b.Kind), AnyTraffic: b.AnyTraffic, Tried: b.Tried, Exceeding: b.Exceeding, Missing: b.Missing, Closest: []MissDoc{}}
		if b.Pick != nil {
			a.Best = ptr(limitDoc(run, b.Pick))
		}
		for _, m := range b.Closest {
			a.Closest = append(a.Closest, missDoc(goal, m))
		}
		d.Algorithms = append(d.Algorithms, a)
	}
	if top := fit.Overall(bests); top != nil {
		d.Best = ptr(top.Limit.String())
	} else {
		for _, m := range fit.Closest(bests) {
			d.Closest = append(d.Closest, missDoc(goal, m))
		}
	}
	return d
}

func missDoc(goal fit.Goal, m fit.Miss) MissDoc {
	d := MissDoc{Limit: m.Limit.String(), Why: m.Why(goal)}
	switch {
	case m.Note != "":
	case m.Run == nil:
		d.ExceededAt = ptr(int64(m.Exceeded))
	case !m.Run.P99Stranded:
		d.Over = ptr(int64(m.Over))
	}
	return d
}

// FitJSON writes the document, indented.
func FitJSON(w io.Writer, run Run, goal fit.Goal, bests []fit.Best) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(NewFitDocument(run, goal, bests))
}

// FitCSVHeader is the first row fit -format csv writes; each row after is
// an algorithm.
var FitCSVHeader = []string{"algorithm", "best", "admitted_units", "refused_units", "p99_wait_ns", "max_wait_ns",
	"max_in_window", "any_traffic", "tried", "exceeded", "missed"}

// FitCSV writes one row per algorithm under FitCSVHeader; an algorithm
// with no pick has its pick's columns empty.
func FitCSV(w io.Writer, run Run, goal fit.Goal, bests []fit.Best) error {
	cw := csv.NewWriter(w)
	cw.Write(FitCSVHeader)
	for _, a := range NewFitDocument(run, goal, bests).Algorithms {
		row := []string{a.Algorithm, "", "", "", "", "", "", "", strconv.Itoa(a.Tried), strconv.Itoa(a.Exceeding), strconv.Itoa(a.Missing)}
		if p := a.Best; p != nil {
			copy(row[1:8], []string{p.Limit, i64(p.Admitted.Units), i64(p.Refused.Units), opt(p.P99), i64(p.Max), i64(p.MaxInWindow),
				strconv.FormatBool(a.AnyTraffic)})
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}
