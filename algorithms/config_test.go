package algorithms_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// maxSpan is the longest span the package accepts: 2^60 ns, about 36 years.
const maxSpan = time.Duration(1 << 60)

func TestConstructorsRejectInvalidConfig(t *testing.T) {
	second := algorithms.PerSecond(1)
	cases := []struct {
		name string
		new  func() (algorithms.Algorithm, error)
	}{
		{"GCRA count 0", func() (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.Rate{Count: 0, Per: time.Second}, 1)
		}},
		{"GCRA count -1", func() (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.Rate{Count: -1, Per: time.Second}, 1)
		}},
		{"GCRA per 0", func() (algorithms.Algorithm, error) { return algorithms.NewGCRA(algorithms.Rate{Count: 1}, 1) }},
		{"GCRA per -1s", func() (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.Rate{Count: 1, Per: -time.Second}, 1)
		}},
		{"GCRA zero rate", func() (algorithms.Algorithm, error) { return algorithms.NewGCRA(algorithms.Rate{}, 1) }},
		{"GCRA burst 0", func() (algorithms.Algorithm, error) { return algorithms.NewGCRA(second, 0) }},
		{"GCRA burst -1", func() (algorithms.Algorithm, error) { return algorithms.NewGCRA(second, -1) }},
		{"GCRA burst MinInt64", func() (algorithms.Algorithm, error) { return algorithms.NewGCRA(second, math.MinInt64) }},
		{"TokenBucket count 0", func() (algorithms.Algorithm, error) {
			return algorithms.NewTokenBucket(algorithms.Rate{Count: 0, Per: time.Second}, 1)
		}},
		{"TokenBucket per 0", func() (algorithms.Algorithm, error) { return algorithms.NewTokenBucket(algorithms.Rate{Count: 1}, 1) }},
		{"TokenBucket capacity 0", func() (algorithms.Algorithm, error) { return algorithms.NewTokenBucket(second, 0) }},
		{"TokenBucket capacity -1", func() (algorithms.Algorithm, error) { return algorithms.NewTokenBucket(second, -1) }},
		{"LeakyBucket count -5", func() (algorithms.Algorithm, error) {
			return algorithms.NewLeakyBucket(algorithms.Rate{Count: -5, Per: time.Second}, 1)
		}},
		{"LeakyBucket per -1ns", func() (algorithms.Algorithm, error) {
			return algorithms.NewLeakyBucket(algorithms.Rate{Count: 1, Per: -1}, 1)
		}},
		{"LeakyBucket capacity 0", func() (algorithms.Algorithm, error) { return algorithms.NewLeakyBucket(second, 0) }},
		{"LeakyBucket capacity -1", func() (algorithms.Algorithm, error) { return algorithms.NewLeakyBucket(second, -1) }},
		{"SlidingWindow limit 0", func() (algorithms.Algorithm, error) {
			return algorithms.NewSlidingWindow(algorithms.Rate{Count: 0, Per: time.Second})
		}},
		{"SlidingWindow limit -1", func() (algorithms.Algorithm, error) {
			return algorithms.NewSlidingWindow(algorithms.Rate{Count: -1, Per: time.Second})
		}},
		{"SlidingWindow window 0", func() (algorithms.Algorithm, error) {
			return algorithms.NewSlidingWindow(algorithms.Rate{Count: 1, Per: 0})
		}},
		{"SlidingWindow window -1s", func() (algorithms.Algorithm, error) {
			return algorithms.NewSlidingWindow(algorithms.Rate{Count: 1, Per: -time.Second})
		}},
		{"FixedWindow limit 0", func() (algorithms.Algorithm, error) {
			return algorithms.NewFixedWindow(algorithms.Rate{Count: 0, Per: time.Second})
		}},
		{"FixedWindow limit -1", func() (algorithms.Algorithm, error) {
			return algorithms.NewFixedWindow(algorithms.Rate{Count: -1, Per: time.Second})
		}},
		{"FixedWindow window 0", func() (algorithms.Algorithm, error) {
			return algorithms.NewFixedWindow(algorithms.Rate{Count: 1, Per: 0})
		}},
		{"FixedWindow window -1ns", func() (algorithms.Algorithm, error) {
			return algorithms.NewFixedWindow(algorithms.Rate{Count: 1, Per: -1})
		}},

		// Spans that would overflow int64 nanoseconds are rejected, not wrapped.
		{"GCRA 1/s burst 2^62", func() (algorithms.Algorithm, error) { return algorithms.NewGCRA(second, 1<<62) }},
		{"GCRA 1/s burst MaxInt64", func() (algorithms.Algorithm, error) { return algorithms.NewGCRA(second, math.MaxInt64) }},
		{"GCRA per MaxInt64", func() (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.Rate{Count: 1, Per: math.MaxInt64}, 1)
		}},
		{"GCRA per 2^60+1ns", func() (algorithms.Algorithm, error) { return algorithms.NewGCRA(algorithms.Every(maxSpan+1), 1) }},
		{"GCRA burst spanning 2^60+1ns", func() (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.Every(time.Nanosecond), int64(maxSpan)+1)
		}},
		{"TokenBucket MaxInt64 every hour", func() (algorithms.Algorithm, error) {
			return algorithms.NewTokenBucket(algorithms.Every(time.Hour), math.MaxInt64)
		}},
		{"TokenBucket per MaxInt64", func() (algorithms.Algorithm, error) {
			return algorithms.NewTokenBucket(algorithms.Rate{Count: 1, Per: math.MaxInt64}, 1)
		}},
		{"TokenBucket 2^41 at 1/ms", func() (algorithms.Algorithm, error) {
			return algorithms.NewTokenBucket(algorithms.Every(time.Millisecond), 1<<41)
		}},
		{"LeakyBucket MaxInt64 every hour", func() (algorithms.Algorithm, error) {
			return algorithms.NewLeakyBucket(algorithms.Every(time.Hour), math.MaxInt64)
		}},
		{"LeakyBucket per MaxInt64", func() (algorithms.Algorithm, error) {
			return algorithms.NewLeakyBucket(algorithms.Rate{Count: 1, Per: math.MaxInt64}, 1)
		}},
		{"SlidingWindow window MaxInt64", func() (algorithms.Algorithm, error) {
			return algorithms.NewSlidingWindow(algorithms.Rate{Count: 1, Per: math.MaxInt64})
		}},
		{"SlidingWindow window 2^60+1ns", func() (algorithms.Algorithm, error) {
			return algorithms.NewSlidingWindow(algorithms.Rate{Count: 1, Per: maxSpan + 1})
		}},
		{"FixedWindow window MaxInt64", func() (algorithms.Algorithm, error) {
			return algorithms.NewFixedWindow(algorithms.Rate{Count: 1, Per: math.MaxInt64})
		}},
		{"FixedWindow window 2^60+1ns", func() (algorithms.Algorithm, error) {
			return algorithms.NewFixedWindow(algorithms.Rate{Count: 1, Per: maxSpan + 1})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := c.new()
			if !errors.Is(err, permits.ErrInvalidConfig) {
				t.Fatalf("err = %v, want one matching ErrInvalidConfig", err)
			}
			if !isNil(a) {
				t.Fatalf("returned %#v beside the error, want nil", a)
			}
		})
	}
}

// isNil reports whether a holds a nil pointer: the constructors return
// concrete pointers, which become non-nil interfaces.
func isNil(a algorithms.Algorithm) bool {
	switch a := a.(type) {
	case *algorithms.GCRA:
		return a == nil
	case *algorithms.TokenBucket:
		return a == nil
	case *algorithms.LeakyBucket:
		return a == nil
	case *algorithms.SlidingWindow:
		return a == nil
	case *algorithms.FixedWindow:
		return a == nil
	}
	return a == nil
}

// The largest accepted configurations sit exactly at the limits.
func TestConstructorsAcceptTheLimits(t *testing.T) {
	checks := []struct {
		name string
		err  error
	}{
		{"GCRA per 2^60ns", second(algorithms.NewGCRA(algorithms.Every(maxSpan), 1))},
		{"GCRA burst spanning 2^60ns", second(algorithms.NewGCRA(algorithms.Every(time.Nanosecond), int64(maxSpan)))},
		{"GCRA burst MaxInt64 at a fast rate", second(algorithms.NewGCRA(algorithms.Rate{Count: math.MaxInt64, Per: time.Second}, math.MaxInt64))},
		{"TokenBucket MaxInt64 at MaxInt64/ns", second(algorithms.NewTokenBucket(algorithms.Rate{Count: math.MaxInt64, Per: 1}, math.MaxInt64))},
		{"LeakyBucket 2^60 at 1/ns", second(algorithms.NewLeakyBucket(algorithms.Every(time.Nanosecond), int64(maxSpan)))},
		{"SlidingWindow MaxInt64 per 2^60ns", second(algorithms.NewSlidingWindow(algorithms.Rate{Count: math.MaxInt64, Per: maxSpan}))},
		{"FixedWindow MaxInt64 per 2^60ns", second(algorithms.NewFixedWindow(algorithms.Rate{Count: math.MaxInt64, Per: maxSpan}))},
		{"FixedWindow 1 per 1ns", second(algorithms.NewFixedWindow(algorithms.Rate{Count: 1, Per: 1}))},
	}
	for _, c := range checks {
		if c.err != nil {
			t.Errorf("%s: %v", c.name, c.err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestRateValidate(t *testing.T) {
	for _, r := range []algorithms.Rate{{}, {Count: 1}, {Per: time.Second}, {Count: -1, Per: time.Second}, {Count: 1, Per: -1}, {Count: 1, Per: math.MaxInt64}} {
		if err := r.Validate(); !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("Rate%+v.Validate() = %v, want ErrInvalidConfig", r, err)
		}
	}
	for _, r := range []algorithms.Rate{algorithms.PerSecond(1), algorithms.PerMinute(7), algorithms.PerHour(3), algorithms.Every(time.Nanosecond), {Count: math.MaxInt64, Per: maxSpan}} {
		if err := r.Validate(); err != nil {
			t.Errorf("Rate%+v.Validate() = %v, want nil", r, err)
		}
	}
}

func TestParseRateAccepts(t *testing.T) {
	for _, c := range []struct {
		in   string
		want algorithms.Rate
	}{
		{"100/minute", algorithms.PerMinute(100)},
		{"100/min", algorithms.PerMinute(100)},
		{"100/m", algorithms.PerMinute(100)},
		{"10/s", algorithms.PerSecond(10)},
		{"10/second", algorithms.PerSecond(10)},
		{"5/1h", algorithms.Rate{Count: 5, Per: time.Hour}},
		{"1000/500ms", algorithms.Rate{Count: 1000, Per: 500 * time.Millisecond}},
		{"3/hour", algorithms.PerHour(3)},
		{" 7 / minutes ", algorithms.PerMinute(7)},
		{"2/5minutes", algorithms.Rate{Count: 2, Per: 5 * time.Minute}},
		{"2/5 min", algorithms.Rate{Count: 2, Per: 5 * time.Minute}},
		{"1/1m30s", algorithms.Rate{Count: 1, Per: 90 * time.Second}},
		{"1/day", algorithms.Rate{Count: 1, Per: 24 * time.Hour}},
		{"1/ns", algorithms.Every(time.Nanosecond)},
		{"4/µs", algorithms.Rate{Count: 4, Per: time.Microsecond}},
		{"9223372036854775807/s", algorithms.PerSecond(math.MaxInt64)},
	} {
		got, err := algorithms.ParseRate(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestParseRateRejects(t *testing.T) {
	for _, c := range []struct {
		in   string
		says string // the error names the problem
	}{
		{"", "COUNT/PERIOD"},
		{"abc", "COUNT/PERIOD"},
		{"0/s", "count must be positive"},
		{"-1/s", "count must be positive"},
		{"10/0s", "period must be positive"},
		{"10/fortnight", `"fortnight" is neither a unit`},
		{"10/", "neither a unit"},
		{"/s", "not a whole number"},
		{"1.5/s", "not a whole number"},
		{"ten/s", "not a whole number"},
		{"99999999999999999999/s", "not a whole number"},
		{"10/-1s", "period must be positive"},
		{"10/0 minutes", "period must be positive"},
		{"1/37y", "neither a unit"},
		{"1/400000days", "too long"},
		{"1/400000h0m", "exceeds the limit"}, // 2^60 ns is about 320255h
		{"1/9223372036854775807ns", "too long"},
	} {
		r, err := algorithms.ParseRate(c.in)
		if !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("ParseRate(%q) = %v, %v; want an error matching ErrInvalidConfig", c.in, r, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.says) || !strings.Contains(msg, c.in) {
			t.Errorf("ParseRate(%q) error %q should quote the input and say %q", c.in, msg, c.says)
		}
	}
}

func TestRateStringRoundTrips(t *testing.T) {
	rates := append([]algorithms.Rate{
		algorithms.PerSecond(10), algorithms.PerMinute(100), algorithms.PerHour(3),
		{Count: 1000, Per: 500 * time.Millisecond}, {Count: 5, Per: 90 * time.Minute},
		{Count: 1, Per: 24 * time.Hour}, {Count: 7, Per: 1500 * time.Microsecond},
		{Count: 1, Per: 1}, {Count: math.MaxInt64, Per: maxSpan}, {Count: 3, Per: 1234567891},
	}, namedRates...)
	for _, r := range rates {
		back, err := algorithms.ParseRate(r.String())
		if err != nil || back != r {
			t.Errorf("ParseRate(%v.String() = %q) = %v, %v", r, r.String(), back, err)
		}
	}
	if got := algorithms.PerSecond(10).String(); got != "10/s" {
		t.Errorf("PerSecond(10).String() = %q, want 10/s", got)
	}
	if got := (algorithms.Rate{Count: 1000, Per: 500 * time.Millisecond}).String(); got != "1000/500ms" {
		t.Errorf("String() = %q, want 1000/500ms", got)
	}
}
