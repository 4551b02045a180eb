package algorithms

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/configerr"
)

// ErrInvalidConfig is permits.ErrInvalidConfig, the one error that every
// configuration error of sluice matches.
//
// Deprecated: match permits.ErrInvalidConfig, the same error.
var ErrInvalidConfig = configerr.ErrInvalid

// invalid is a configuration error, matching permits.ErrInvalidConfig.
func invalid(format string, args ...any) error { return configerr.Errorf("sluice", format, args...) }

// Rate is Count cost units per period Per. The zero Rate is invalid.
type Rate struct {
	Count int64         // cost units ...
	Per   time.Duration // ... per this period
}

// PerSecond returns n units per second.
func PerSecond(n int64) Rate { return Rate{Count: n, Per: time.Second} }

// PerMinute returns n units per minute.
func PerMinute(n int64) Rate { return Rate{Count: n, Per: time.Minute} }

// PerHour returns n units per hour.
func PerHour(n int64) Rate { return Rate{Count: n, Per: time.Hour} }

// Every returns one unit per d.
func Every(d time.Duration) Rate { return Rate{Count: 1, Per: d} }

// Validate reports whether r can configure a limiter: Count and Per must be
// positive and Per at most about 36 years.
func (r Rate) Validate() error {
	switch {
	case r.Count <= 0:
		return invalid("rate count must be positive, got %d", r.Count)
	case r.Per <= 0:
		return invalid("rate period must be positive, got %v", r.Per)
	case r.Per > maxSpan:
		return invalid("rate period %v exceeds the limit of %v", r.Per, time.Duration(maxSpan))
	}
	return nil
}

// String formats r so that ParseRate reads it back: "10/s", "100/m",
// "3/h", "1000/500ms".
func (r Rate) String() string {
	n := strconv.FormatInt(r.Count, 10)
	switch r.Per {
	case time.Second:
		return n + "/s"
	case time.Minute:
		return n + "/m"
	case time.Hour:
		return n + "/h"
	}
	return n + "/" + r.Per.String()
}

// units maps the words ParseRate accepts after "/" to their period.
var units = map[string]time.Duration{
	"ns": time.Nanosecond, "nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
	"us": time.Microsecond, "µs": time.Microsecond, "microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ms": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

// ParseRate reads "COUNT/PERIOD" where PERIOD is a unit ("s", "second",
// "m", "min", "minute", "h", "hour", "ms", "day", ...), a whole multiple of
// one ("5minutes", "5 min"), or a Go duration ("1h", "500ms", "1m30s"):
// "100/minute", "10/s", "5/1h", "1000/500ms". Errors match ErrInvalidConfig.
func ParseRate(s string) (Rate, error) {
	count, period, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, invalid("rate %q: want COUNT/PERIOD such as 10/s or 100/minute", s)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(count), 10, 64)
	if err != nil {
		return Rate{}, invalid("rate %q: count %q is not a whole number", s, count)
	}
	per, err := parsePeriod(strings.TrimSpace(period))
	if err != nil {
		return Rate{}, invalid("rate %q: %v", s, err)
	}
	r := Rate{Count: n, Per: per}
	if err := r.Validate(); err != nil {
		return Rate{}, fmt.Errorf("rate %q: %w", s, err)
	}
	return r, nil
}

func parsePeriod(p string) (time.Duration, error) {
	if d, ok := units[strings.ToLower(p)]; ok {
		return d, nil
	}
	// A whole multiple of a unit word: "5minutes", "2 hours".
	i := 0
	for i < len(p) && p[i] >= '0' && p[i] <= '9' {
		i++
	}
	if i > 0 && i < len(p) {
		if d, ok := units[strings.ToLower(strings.TrimSpace(p[i:]))]; ok {
			k, err := strconv.ParseInt(p[:i], 10, 64)
			if err != nil || k > maxSpan/int64(d) {
				return 0, fmt.Errorf("period %q is too long", p)
			}
			return time.Duration(k) * d, nil
		}
	}
	d, err := time.ParseDuration(p)
	if err != nil {
		return 0, fmt.Errorf("period %q is neither a unit (s, minute, hour, ...) nor a duration (1h, 500ms)", p)
	}
	return d, nil
}

// span returns n units' worth of time at rate r, n·Per/Count, checking that
// it fits the limits every algorithm relies on.
func span(r Rate, n int64, what string) error {
	if _, ok := mulDiv(n, int64(r.Per), r.Count); !ok {
		return invalid("%s %d at %v spans more than %v", what, n, r, time.Duration(maxSpan))
	}
	return nil
}

func positive(what string, n int64) error {
	if n <= 0 {
		return invalid("%s must be positive, got %d", what, n)
	}
	return nil
}
