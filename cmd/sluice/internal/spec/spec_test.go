package spec_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/permits"
)

func TestParse(t *testing.T) {
	per := func(n int64, d time.Duration) algorithms.Rate { return algorithms.Rate{Count: n, Per: d} }
	for _, tc := range []struct {
		in   string
		want spec.Limit
		str  string
	}{
		{"gcra:100/s", spec.Limit{Kind: spec.GCRA, Rate: per(100, time.Second), Size: 1}, "gcra:100/s,burst=1"},
		{"gcra:100/s,burst=10", spec.Limit{Kind: spec.GCRA, Rate: per(100, time.Second), Size: 10}, "gcra:100/s,burst=10"},
		{"gcra:10,100/s", spec.Limit{Kind: spec.GCRA, Rate: per(100, time.Second), Size: 10}, "gcra:100/s,burst=10"},
		{" GCRA : burst=10 , rate=100/second ", spec.Limit{Kind: spec.GCRA, Rate: per(100, time.Second), Size: 10}, "gcra:100/s,burst=10"},
		{"token:50,1/s", spec.Limit{Kind: spec.Token, Rate: per(1, time.Second), Size: 50}, "token:1/s,capacity=50"},
		{"token:rate=1/s,capacity=50", spec.Limit{Kind: spec.Token, Rate: per(1, time.Second), Size: 50}, "token:1/s,capacity=50"},
		{"leaky:2/s,40", spec.Limit{Kind: spec.Leaky, Rate: per(2, time.Second), Size: 40}, "leaky:2/s,capacity=40"},
		{"sliding:100/1m", spec.Limit{Kind: spec.Sliding, Rate: per(100, time.Minute), Size: 0}, "sliding:100/m"},
		{"fixed:100/1m", spec.Limit{Kind: spec.Fixed, Rate: per(100, time.Minute), Size: 0}, "fixed:100/m"},
		{"gcra:10/s,burst=5,per=key", spec.Limit{Kind: spec.GCRA, Rate: per(10, time.Second), Size: 5, PerKey: true}, "gcra:10/s,burst=5,per=key"},
		{"sliding:per=KEY,100/1m", spec.Limit{Kind: spec.Sliding, Rate: per(100, time.Minute), PerKey: true}, "sliding:100/m,per=key"},
		{"fixed:rate=5/200ms", spec.Limit{Kind: spec.Fixed, Rate: per(5, 200*time.Millisecond), Size: 0}, "fixed:5/200ms"},
	} {
		got, err := spec.Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if got.String() != tc.str {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got.String(), tc.str)
		}
		if back, err := spec.Parse(got.String()); err != nil || back != got {
			t.Errorf("Parse(%q) = %+v, %v: does not read its String back", got.String(), back, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, says string }{
		{"", "want KIND:ARGS"},
		{"gcra", "want KIND:ARGS"},
		{"tokens:1/s,5", `unknown kind "tokens"`},
		{"gcra:", "empty argument"},
		{"gcra:100/s,", "empty argument"},
		{"gcra:burst=10", "gcra needs a rate"},
		{"token:1/s", "token needs a capacity"},
		{"leaky:40", "leaky needs a rate"},
		{"gcra:100/s,200/s", "the rate is given twice"},
		{"gcra:100/s,5,6", "the burst is given twice"},
		{"gcra:100/s,burst=0", `burst "0" is not a whole number of at least 1`},
		{"gcra:100/s,per=user", `per= takes key, once`},
		{"gcra:100/s,per=key,per=key", `per= takes key, once`},
		{"gcra:100/s,burst=ten", `burst "ten" is not a whole number`},
		{"gcra:100/s,capacity=5", `gcra takes rate=, burst= and per=key, not "capacity"`},
		{"token:1/s,burst=5", `token takes rate=, capacity= and per=key, not "burst"`},
		{"sliding:100/1m,5", "sliding takes a rate only"},
		{"fixed:100/1m,burst=5", `fixed takes rate= and per=key only, not "burst"`},
		{"sliding:100/fortnight", "neither a unit"},
		{"sliding:0/s", "rate count must be positive"},
		{"gcra:1/h,burst=9223372036854775807", "spans more than"},
	} {
		_, err := spec.Parse(tc.in)
		switch {
		case err == nil:
			t.Errorf("Parse(%q) succeeded, want an error saying %q", tc.in, tc.says)
		case !errors.Is(err, spec.ErrInvalid):
			t.Errorf("Parse(%q) = %v, which does not match ErrInvalid", tc.in, err)
		case !strings.Contains(err.Error(), tc.says):
			t.Errorf("Parse(%q) = %q, want it to say %q", tc.in, err, tc.says)
		}
	}
	// The algorithm's own refusals keep their sentinel.
	if _, err := spec.Parse("gcra:1/h,burst=9223372036854775807"); !errors.Is(err, permits.ErrInvalidConfig) {
		t.Errorf("an overlong burst: %v does not match permits.ErrInvalidConfig", err)
	}
}

func TestParseUpstream(t *testing.T) {
	got, err := spec.ParseUpstream("100/s")
	if err != nil || got.String() != "sliding:100/s" {
		t.Errorf(`ParseUpstream("100/s") = %v, %v; want sliding:100/s`, got, err)
	}
	got, err = spec.ParseUpstream("fixed:1000/h")
	if err != nil || got.String() != "fixed:1000/h" {
		t.Errorf(`ParseUpstream("fixed:1000/h") = %v, %v`, got, err)
	}
	if _, err := spec.ParseUpstream("100"); !errors.Is(err, spec.ErrInvalid) {
		t.Errorf(`ParseUpstream("100") = %v, want ErrInvalid`, err)
	}
}

func TestNewMatchesKind(t *testing.T) {
	for _, s := range []string{"gcra:10/s,burst=3", "token:10/s,3", "leaky:10/s,3", "sliding:7/s", "fixed:7/s"} {
		l, err := spec.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		a, err := l.New()
		if err != nil {
			t.Fatal(err)
		}
		if a.Capacity() != l.Capacity() {
			t.Errorf("%s: algorithm capacity %d, Limit.Capacity %d", s, a.Capacity(), l.Capacity())
		}
		var want string
		switch a.(type) {
		case *algorithms.GCRA:
			want = "gcra"
		case *algorithms.TokenBucket:
			want = "token"
		case *algorithms.LeakyBucket:
			want = "leaky"
		case *algorithms.SlidingWindow:
			want = "sliding"
		case *algorithms.FixedWindow:
			want = "fixed"
		}
		if want != string(l.Kind) {
			t.Errorf("%s: New returned a %T", s, a)
		}
	}
	if _, err := (spec.Limit{Kind: "nope"}).New(); !errors.Is(err, spec.ErrInvalid) {
		t.Errorf("New of an unknown kind: %v", err)
	}
}

func TestBound(t *testing.T) {
	mustParse := func(s string) spec.Limit {
		l, err := spec.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, tc := range []struct {
		limit string
		d     time.Duration
		want  int64
	}{
		{"gcra:100/s,burst=10", time.Second, 109}, // the 110th would be 1s after the first: outside [t, t+1s)
		{"gcra:100/s,burst=10", time.Second + 1, 110},
		{"gcra:100/s,burst=10", 999 * time.Millisecond, 109},
		{"gcra:100/s,burst=10", time.Nanosecond, 10},
		{"token:3/s,5", time.Second, 7},
		{"token:3/s,5", 500 * time.Millisecond, 6}, // ⌊1.5⌋
		{"leaky:1/m,1", time.Hour, 60},
		{"sliding:100/m", time.Minute, 100},
		{"sliding:100/m", time.Minute + 1, 200},
		{"sliding:100/m", time.Second, 100},
		{"fixed:100/m", time.Minute, 200},
		{"fixed:100/m", time.Second, 200},
		{"fixed:100/m", 2 * time.Minute, 300},
		{"fixed:100/m", 0, 0},
		{"gcra:9223372036854775807/ns,burst=1", time.Hour, 1<<63 - 1},
	} {
		if got := mustParse(tc.limit).Bound(tc.d); got != tc.want {
			t.Errorf("%s.Bound(%v) = %d, want %d", tc.limit, tc.d, got, tc.want)
		}
	}
}
