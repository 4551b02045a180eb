package traffic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// jsonRows reads JSON lines: one object per line, the arrival's instant in
// the field Fields.Time (an RFC 3339 string, or a number of seconds since
// the Unix epoch, fractions allowed), its key in Fields.Key (a string or a
// number; none when the option is not given) and its cost in Fields.Cost
// (a whole number of at least 1; 1 when the option is not given). A line
// that is not an object, or lacks a field asked for, is an error naming
// it. Blank lines are skipped.
type jsonRows struct {
	l      *lines
	f      Fields
	intern func(string) uint32
	obj    map[string]json.RawMessage
}

func newJSONRows(r io.Reader, name string, f Fields, intern func(string) uint32) rowReader {
	return &jsonRows{l: newLines(r, name), f: f, intern: intern}
}

func (jr *jsonRows) row() (row, error) {
	for {
		line, n, err := jr.l.next()
		if err != nil {
			return row{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r, msg := jr.parse(line)
		if msg != "" {
			return row{}, invalid("%s:%d: %s", jr.l.name, n, msg)
		}
		r.line = n
		return r, nil
	}
}

func (jr *jsonRows) parse(line []byte) (row, string) {
	clear(jr.obj)
	if err := json.Unmarshal(line, &jr.obj); err != nil || jr.obj == nil {
		return row{}, "not a JSON object"
	}
	raw, ok := jr.obj[jr.f.Time]
	if !ok {
		return row{}, fmt.Sprintf("no field %q (time=)", jr.f.Time)
	}
	at, msg := jsonTime(raw)
	if msg != "" {
		return row{}, fmt.Sprintf("field %q: %s", jr.f.Time, msg)
	}
	r := row{at: at, instant: true, cost: 1}
	if jr.f.Key != "" {
		raw, ok := jr.obj[jr.f.Key]
		if !ok {
			return row{}, fmt.Sprintf("no field %q (key=)", jr.f.Key)
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(bytes.TrimSpace(raw)) // a number or another value, as written
		}
		r.key = jr.intern(s)
	}
	if jr.f.Cost != "" {
		raw, ok := jr.obj[jr.f.Cost]
		if !ok {
			return row{}, fmt.Sprintf("no field %q (cost=)", jr.f.Cost)
		}
		c, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
		if err != nil || c < 1 {
			return row{}, fmt.Sprintf("field %q is %s, not a whole number of at least 1", jr.f.Cost, raw)
		}
		r.cost = c
	}
	return r, ""
}

// jsonTime reads an RFC 3339 string or a number of Unix seconds.
func jsonTime(raw json.RawMessage) (int64, string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, fmt.Sprintf("%q is not an RFC 3339 instant", s)
		}
		if t.Year() < 1678 || t.Year() > 2261 {
			return 0, fmt.Sprintf("%q is outside the years 1678 to 2261", s)
		}
		return t.UnixNano(), ""
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil || math.IsNaN(f) || f < -9.2e9 || f > 9.2e9 {
		return 0, fmt.Sprintf("%s is neither an RFC 3339 string nor Unix seconds", raw)
	}
	sec, frac := math.Modf(f)
	return int64(sec)*int64(time.Second) + int64(math.Round(frac*1e9)), ""
}
