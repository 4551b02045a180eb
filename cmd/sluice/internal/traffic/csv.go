package traffic

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// csvRows reads recorded traffic, one arrival per row:
//
//	time[,cost]
//
// time is seconds after the start ("12.5", exact to the nanosecond), a Go
// duration ("12.5s", "1m2s"), or an RFC 3339 instant
// ("2025-03-01T12:00:00.25Z"), which keeps its place on the calendar (the
// run starts at the earliest); one file uses offsets or instants, not
// both. cost is a whole number of at least 1, 1 when absent. Rows may be
// out of order by up to Reorder. Blank lines and lines starting with # are
// skipped, and a first row whose time is not a time (a header such as
// "time,cost") is skipped too.
type csvRows struct {
	cr   *csv.Reader
	name string
	n    int
}

func newCSVRows(r io.Reader, name string) *csvRows {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	return &csvRows{cr: cr, name: name}
}

func (c *csvRows) row() (row, error) {
	for {
		rec, err := c.cr.Read()
		if err == io.EOF {
			return row{}, io.EOF
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return row{}, invalid("%s:%d: %v", c.name, pe.Line, pe.Err)
			}
			return row{}, invalid("%s: %v", c.name, err)
		}
		c.n++
		line, _ := c.cr.FieldPos(0)
		if len(rec) > 2 {
			return row{}, invalid("%s:%d: %d fields, want time[,cost]", c.name, line, len(rec))
		}
		field := strings.TrimSpace(rec[0])
		r, terr := parseTime(field)
		if terr != nil {
			if c.n == 1 && !strings.ContainsAny(field, "0123456789") {
				continue // a header
			}
			return row{}, invalid("%s:%d: %v", c.name, line, terr)
		}
		r.line, r.cost = line, 1
		if len(rec) == 2 {
			if r.cost, err = parseCost(rec[1]); err != nil {
				return row{}, invalid("%s:%d: %v", c.name, line, err)
			}
		}
		return r, nil
	}
}

func parseCost(s string) (int64, error) {
	c, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || c < 1 {
		return 0, fmt.Errorf("cost %q is not a whole number of at least 1", s)
	}
	return c, nil
}

// parseTime reads an offset (seconds or a Go duration) or an RFC 3339
// instant.
func parseTime(s string) (row, error) {
	if d, ok := seconds(s); ok {
		return row{at: int64(d)}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return row{}, fmt.Errorf("time %q is before the start", s)
		}
		return row{at: int64(d)}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		if t.Year() < 1678 || t.Year() > 2261 {
			return row{}, fmt.Errorf("instant %q is outside the years 1678 to 2261", s)
		}
		return row{at: t.UnixNano(), instant: true}, nil
	}
	return row{}, fmt.Errorf("time %q is neither seconds (12.5), a duration (12.5s) nor an RFC 3339 instant", s)
}

// seconds reads a non-negative decimal number of seconds exactly, to the
// nanosecond: "12", "12.5", ".25", "0.000000001".
func seconds(s string) (time.Duration, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || len(frac) > 9 || strings.ContainsAny(whole+frac, "+-") {
		return 0, false
	}
	var w, f int64
	var err error
	if whole != "" {
		if w, err = strconv.ParseInt(whole, 10, 64); err != nil || w > int64(1<<63-1)/int64(time.Second)-1 {
			return 0, false
		}
	}
	if frac != "" {
		if f, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return 0, false
		}
	}
	return time.Duration(w)*time.Second + time.Duration(f), true
}

// ReadCSV reads a csv replay into memory, in order of instant (see
// Plan for the format), measured from its earliest instant when it holds
// instants; name is used in errors, which give the line.
func ReadCSV(r io.Reader, name string) ([]Arrival, error) {
	open := func(string) (io.ReadCloser, error) { return io.NopCloser(r), nil }
	a, _, err := Generate([]Pattern{{Kind: CSV, Path: name}}, 0, 0, open)
	return a, err
}
