package traffic

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// ReadFile reads a csv replay file with ReadCSV; errors name the file and
// the line.
func ReadFile(path string) ([]Arrival, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, invalid("%v", err)
	}
	defer f.Close()
	return ReadCSV(f, path)
}

// ReadCSV reads recorded traffic, one arrival per row:
//
//	time[,cost]
//
// time is seconds after the start ("12.5", exact to the nanosecond), a Go
// duration ("12.5s", "1m2s"), or an RFC 3339 instant
// ("2025-03-01T12:00:00.25Z"), which is then measured from the earliest
// instant in the file; one file uses offsets or instants, not both. cost is
// a whole number of at least 1, 1 when absent. Rows need not be sorted.
// Blank lines and lines starting with # are skipped, and a first row whose
// time is not a time (a header such as "time,cost") is skipped too. name is
// used in errors, which give the line.
func ReadCSV(r io.Reader, name string) ([]Arrival, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	var (
		out    []Arrival
		stamps []time.Time // RFC 3339 rows, resolved once the earliest is known
		mode   int         // 0 unknown, 1 offsets, 2 instants
	)
	for row := 0; ; row++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, invalid("%s:%d: %v", name, pe.Line, pe.Err)
			}
			return nil, invalid("%s: %v", name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) > 2 {
			return nil, invalid("%s:%d: %d fields, want time[,cost]", name, line, len(rec))
		}
		field := strings.TrimSpace(rec[0])
		at, stamp, isStamp, terr := parseTime(field)
		if terr != nil {
			if row == 0 && !strings.ContainsAny(field, "0123456789") {
				continue // a header
			}
			return nil, invalid("%s:%d: %v", name, line, terr)
		}
		m := 1
		if isStamp {
			m = 2
		}
		if mode != 0 && m != mode {
			return nil, invalid("%s:%d: mixes RFC 3339 instants and offsets; use one or the other", name, line)
		}
		mode = m
		cost := int64(1)
		if len(rec) == 2 {
			c, err := strconv.ParseInt(strings.TrimSpace(rec[1]), 10, 64)
			if err != nil || c < 1 {
				return nil, invalid("%s:%d: cost %q is not a whole number of at least 1", name, line, rec[1])
			}
			cost = c
		}
		if len(out) >= MaxArrivals {
			return nil, invalid("%s:%d: more than %d rows, the simulator's limit", name, line, MaxArrivals)
		}
		if isStamp {
			stamps = append(stamps, stamp)
		}
		out = append(out, Arrival{At: at, Cost: cost})
	}
	if mode == 2 {
		first := stamps[0]
		for _, s := range stamps {
			if s.Before(first) {
				first = s
			}
		}
		for i, s := range stamps {
			d := s.Sub(first)
			if d == time.Duration(1<<63-1) {
				return nil, invalid("%s: instants span more than time.Duration can hold", name)
			}
			out[i].At = d
		}
	}
	return out, nil
}

// parseTime reads an offset (seconds or a Go duration) or an RFC 3339
// instant.
func parseTime(s string) (at time.Duration, stamp time.Time, isStamp bool, err error) {
	if d, ok := seconds(s); ok {
		return d, time.Time{}, false, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return 0, time.Time{}, false, fmt.Errorf("time %q is before the start", s)
		}
		return d, time.Time{}, false, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return 0, t, true, nil
	}
	return 0, time.Time{}, false, fmt.Errorf("time %q is neither seconds (12.5), a duration (12.5s) nor an RFC 3339 instant", s)
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
