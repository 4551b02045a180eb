package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/bench/internal/scenario"
)

// runner runs measurements, reports progress and collects the errors of
// scenarios that could not run.
type runner struct {
	cfg      config
	progress io.Writer
	errs     []error
	started  time.Time
}

func (r *runner) logf(format string, args ...any) {
	if r.started.IsZero() {
		r.started = time.Now()
	}
	fmt.Fprintf(r.progress, "[%6.1fs] %s\n", time.Since(r.started).Seconds(), fmt.Sprintf(format, args...))
}

func (r *runner) fail(err error) {
	r.logf("ERROR: %v", err)
	r.errs = append(r.errs, err)
}

// micro is the median cost per call of each subject.
type micro struct {
	ns, allocs float64
	ok         bool
}

// micros measures subjects on g goroutines, interleaved: every run of
// every subject before the next run of the first.
func (r *runner) micros(label string, g int, subjects []scenario.Micro) []micro {
	ns := make([][]float64, len(subjects))
	allocs := make([][]float64, len(subjects))
	failed := make([]bool, len(subjects))
	for rep := range r.cfg.count {
		for i, s := range subjects {
			if failed[i] {
				continue
			}
			v, a, err := scenario.Throughput(s, g, r.cfg.d)
			if err != nil {
				failed[i] = true
				r.fail(fmt.Errorf("%s, %s: %w", label, s.Name, err))
				continue
			}
			r.logf("%s, %d goroutines, run %d/%d: %s %s", label, g, rep+1, r.cfg.count, s.Name, formatNs(v))
			ns[i] = append(ns[i], v)
			allocs[i] = append(allocs[i], a)
		}
	}
	res := make([]micro, len(subjects))
	for i := range subjects {
		if !failed[i] {
			res[i] = micro{ns: median(ns[i]), allocs: median(allocs[i]), ok: true}
		}
	}
	return res
}

// median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 0 {
		return (s[m-1] + s[m]) / 2
	}
	return s[m]
}

func formatNs(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	case ns >= 100:
		return fmt.Sprintf("%.0f ns", ns)
	}
	return fmt.Sprintf("%.1f ns", ns)
}

func formatDuration(d time.Duration) string { return formatNs(float64(d)) }

// cell formats a micro result with its allocations.
func (m micro) cell() string {
	if !m.ok {
		return "error"
	}
	return fmt.Sprintf("%s (%s allocs/op)", formatNs(m.ns), formatCount(m.allocs))
}

// formatCount prints a per-call count: whole when it is within 0.01 of a
// whole number (1 allocation per call, give or take a GC's), else with two
// decimals.
func formatCount(x float64) string {
	if r := math.Round(x); math.Abs(x-r) < 0.01 {
		return fmt.Sprintf("%d", int64(r))
	}
	return fmt.Sprintf("%.2f", x)
}

// ratio formats a/b as "1.23×", or "–" when either is missing.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// table writes a Markdown table.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(b *strings.Builder) {
	b.WriteString("| " + strings.Join(t.header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(t.header)) + "\n")
	for _, row := range t.rows {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	b.WriteString("\n")
}
