package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
)

// Schema names the JSON document's version; a change that removes or
// renames a field changes it (docs/simulator.md describes every field).
const Schema = "sluice.simulate/v1"

// Document is the JSON form of a simulation: what -format json prints.
// Durations are whole nanoseconds (fields ending in _ns); counts of
// requests and of units (cost) are given apart.
type Document struct {
	Header
	Upstream *string    `json:"upstream"`  // null: none
	Window   int64      `json:"window_ns"` // the length "max in window" is measured over
	Limits   []LimitDoc `json:"limits"`
	Notes    []string   `json:"notes"`
}

// Header opens both documents: the schema, the traffic and the callers.
type Header struct {
	Schema  string     `json:"schema"`
	Traffic TrafficDoc `json:"traffic"`
	MaxWait *int64     `json:"max_wait_ns"` // null: callers wait as long as it takes
	Retry   *string    `json:"retry"`       // how refused callers retry; null: they do not
}

// TrafficDoc describes the arrivals.
type TrafficDoc struct {
	Patterns []string `json:"patterns"`
	Arrivals int64    `json:"arrivals"`
	Units    int64    `json:"units"`
	Duration int64    `json:"duration_ns"`
	Origin   string   `json:"origin"` // RFC 3339: the instant offset 0 stands for
	Seed     uint64   `json:"seed"`
	Keys     int      `json:"keys"`    // distinct keys in the traffic, 0 for none
	Dropped  int64    `json:"dropped"` // arrivals left out by -duration
}

// Count is a number of requests and the units they cost.
type Count struct {
	Requests int64 `json:"requests"`
	Units    int64 `json:"units"`
}

// LimitDoc is one limit's row.
type LimitDoc struct {
	Limit    string `json:"limit"` // canonical: parses back to the same limit
	Offered  Count  `json:"offered"`
	Admitted Count  `json:"admitted"`
	Refused  Count  `json:"refused"`
	Stranded Count  `json:"stranded"`  // still waiting at the end
	TooLarge int64  `json:"too_large"` // requests refused as above capacity (in refused too)
	Waited   int64  `json:"waited"`    // admitted requests that waited at all
	// Percentiles over admitted and stranded requests, nearest rank; null
	// when the percentile falls among the stranded.
	P50 *int64 `json:"p50_wait_ns"`
	P99 *int64 `json:"p99_wait_ns"`
	Max int64  `json:"max_wait_ns"` // the longest granted wait
	// The most units admitted in any window of window_ns, from when.
	MaxInWindow   int64 `json:"max_in_window"`
	MaxInWindowAt int64 `json:"max_in_window_at_ns"`
	// Admissions the upstream would refuse and the first's instant; both
	// null without an upstream.
	Exceeded      *int64 `json:"exceeded"`
	FirstExceeded *int64 `json:"first_exceeded_ns"`
	LastGrant     int64  `json:"last_grant_ns"`
	// A per-key limit's keys (0 for a limit over all of them) and those
	// it refused most, the most first.
	Keys       int      `json:"keys"`
	TopRefused []KeyDoc `json:"top_refused"`
	// Attempts after the first, attempts per request, and the most
	// retries at one instant and the first such instant.
	Retries       int64   `json:"retries"`
	Amplification float64 `json:"amplification"`
	PeakRetries   int64   `json:"peak_retries"`
	PeakRetriesAt int64   `json:"peak_retries_at_ns"`
}

// KeyDoc is a key and the requests refused it.
type KeyDoc struct {
	Key     string `json:"key"`
	Refused int64  `json:"refused"`
}

// NewDocument builds the document of a run.
func NewDocument(run Run, results []*sim.Result) Document {
	d := Document{Header: header(Schema, run), Window: int64(run.Window), Limits: []LimitDoc{}, Notes: notes(run, results)}
	if run.Upstream != nil {
		d.Upstream = ptr(run.Upstream.String())
	}
	for _, r := range results {
		d.Limits = append(d.Limits, limitDoc(run, r))
	}
	return d
}

func header(schema string, run Run) Header {
	s := run.Summary
	h := Header{Schema: schema, Traffic: TrafficDoc{Patterns: run.Traffic, Arrivals: s.Arrivals, Units: s.Units, Duration: int64(s.Duration),
		Origin: s.Origin.Format(time.RFC3339Nano), Seed: run.Seed, Keys: max(len(s.Keys)-1, 0), Dropped: s.Dropped}}
	if run.MaxWait >= 0 {
		h.MaxWait = ptr(int64(run.MaxWait))
	}
	if run.Retry.Max > 0 {
		h.Retry = ptr(run.Retry.String())
	}
	return h
}

func limitDoc(run Run, r *sim.Result) LimitDoc {
	l := LimitDoc{Limit: r.Limit.String(), Offered: Count{r.Offered, r.OfferedUnits}, Admitted: Count{r.Admitted, r.AdmittedUnits},
		Refused: Count{r.Refused, r.RefusedUnits}, Stranded: Count{r.Stranded, r.StrandedUnits}, TooLarge: r.TooLarge,
		Waited: r.Waited, Max: int64(r.Max), MaxInWindow: r.MaxInWindow, MaxInWindowAt: int64(r.MaxInWindowAt), LastGrant: int64(r.End),
		Keys: r.Keys, TopRefused: []KeyDoc{}, Retries: r.Retries, Amplification: Amplification(r),
		PeakRetries: r.PeakRetries, PeakRetriesAt: int64(r.PeakRetriesAt)}
	for _, k := range r.TopRefused {
		l.TopRefused = append(l.TopRefused, KeyDoc{Key: keyName(run.Summary, k.Key), Refused: k.Refused})
	}
	if !r.P50Stranded {
		l.P50 = ptr(int64(r.P50))
	}
	if !r.P99Stranded {
		l.P99 = ptr(int64(r.P99))
	}
	if r.Upstream != nil {
		l.Exceeded, l.FirstExceeded = ptr(r.Exceeded), ptr(int64(r.FirstExceeded))
	}
	return l
}

func ptr[T any](v T) *T { return &v }

// JSON writes the document, indented.
func JSON(w io.Writer, run Run, results []*sim.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(NewDocument(run, results))
}

// CSVHeader is the first row -format csv writes; each row after is a limit.
var CSVHeader = []string{"limit", "offered_requests", "offered_units", "admitted_requests", "admitted_units",
	"refused_requests", "refused_units", "stranded_requests", "too_large", "waited", "p50_wait_ns", "p99_wait_ns",
	"max_wait_ns", "max_in_window", "window_ns", "exceeded", "first_exceeded_ns", "keys", "retries", "peak_retries", "peak_retries_at_ns"}

// CSV writes one row per limit under CSVHeader; a percentile that falls
// among the stranded, and the upstream's columns without one, are empty.
func CSV(w io.Writer, run Run, results []*sim.Result) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	for _, l := range NewDocument(run, results).Limits {
		cw.Write([]string{l.Limit, i64(l.Offered.Requests), i64(l.Offered.Units), i64(l.Admitted.Requests), i64(l.Admitted.Units),
			i64(l.Refused.Requests), i64(l.Refused.Units), i64(l.Stranded.Requests), i64(l.TooLarge), i64(l.Waited),
			opt(l.P50), opt(l.P99), i64(l.Max), i64(l.MaxInWindow), i64(int64(run.Window)), opt(l.Exceeded), opt(l.FirstExceeded),
			i64(int64(l.Keys)), i64(l.Retries), i64(l.PeakRetries), i64(l.PeakRetriesAt)})
	}
	cw.Flush()
	return cw.Error()
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }

func opt(p *int64) string {
	if p == nil {
		return ""
	}
	return i64(*p)
}

// Series writes the binned series as csv: a row per bin, its start in
// seconds after the run's start, the units offered in it, and the units
// each limit admitted in it (a column per limit, named by its spec).
func Series(w io.Writer, results []*sim.Result) error {
	if len(results) == 0 || results[0].Bin <= 0 {
		return fmt.Errorf("no series: the run kept no bins")
	}
	cw := csv.NewWriter(w)
	header := []string{"start_s", "offered_units"}
	for _, r := range results {
		header = append(header, r.Limit.String())
	}
	cw.Write(header)
	bin := results[0].Bin
	for k, off := range results[0].OfferedUnitsPerBin {
		row := []string{strconv.FormatFloat((time.Duration(k) * bin).Seconds(), 'f', -1, 64), i64(off)}
		for _, r := range results {
			var u int64
			if k < len(r.AdmittedUnitsPerBin) {
				u = r.AdmittedUnitsPerBin[k]
			}
			row = append(row, i64(u))
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}
