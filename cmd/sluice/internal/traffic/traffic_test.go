package traffic_test

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

func mustParse(t *testing.T, specs ...string) []traffic.Pattern {
	t.Helper()
	var ps []traffic.Pattern
	for _, s := range specs {
		p, err := traffic.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

func noFiles(path string) (io.ReadCloser, error) {
	return nil, errors.New("no file " + path)
}

func gen(t *testing.T, d time.Duration, seed uint64, specs ...string) []traffic.Arrival {
	t.Helper()
	a, got, err := traffic.Generate(mustParse(t, specs...), d, seed, noFiles)
	if err != nil {
		t.Fatal(err)
	}
	if got != d {
		t.Fatalf("Generate used duration %v, want %v", got, d)
	}
	return a
}

func instants(a []traffic.Arrival) []time.Duration {
	var out []time.Duration
	for _, x := range a {
		out = append(out, x.At)
	}
	return out
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseRoundTrip(t *testing.T) {
	for _, tc := range []struct{ in, canon string }{
		{"steady:1000/s", "steady:1000/s"},
		{" Poisson : 90/1m , cost=2 ", "poisson:90/m,cost=2"},
		{"onoff:200/s,on=5s,off=10s,from=1m,until=10m", "onoff:200/s,on=5s,off=10s,from=1m,until=10m"},
		{"spike:100@59.5s,100@1m0.5s,cost=1-5", "spike:100@59.5s,100@1m0.5s,cost=1-5"},
		{"csv:some/dir/file,with,commas.csv", "csv:some/dir/file,with,commas.csv"},
		{"poisson:10/s,keys=50", "poisson:10/s,keys=50"},
		{"steady:10/s,keys=50,spread=uniform", "steady:10/s,keys=50"},
		{"steady:10/s,spread=ZIPF,keys=5", "steady:10/s,keys=5,spread=zipf:1.1"},
		{"steady:10/s,keys=5,spread=zipf:1.5", "steady:10/s,keys=5,spread=zipf:1.5"},
	} {
		p, err := traffic.Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if p.String() != tc.canon {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, p.String(), tc.canon)
		}
		back, err := traffic.Parse(p.String())
		if err != nil || back.String() != p.String() {
			t.Errorf("%q does not read back: %v, %v", p.String(), back, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, says string }{
		{"steady", "want KIND:ARGS"},
		{"burst:10/s", `unknown kind "burst"`},
		{"steady:", "empty argument"},
		{"steady:cost=2", "steady needs a rate"},
		{"steady:10/s,20/s", "the rate is given twice"},
		{"steady:10/s,cost=0", `cost "0" is not a whole number`},
		{"steady:10/s,cost=5-2", "runs backwards"},
		{"steady:10/s,cost=2,cost=3", "cost= is given twice"},
		{"steady:10/s,on=1s", "on= is for onoff only"},
		{"steady:10/s,from=-1s", "is before the start"},
		{"steady:10/s,from=2s,until=1s", "is not after from="},
		{"steady:10/s,until=0s", "until=0 leaves no arrivals"},
		{"steady:10/s,jitter=5", `unknown option "jitter"`},
		{"onoff:10/s,on=1s", "onoff needs on= and off="},
		{"onoff:10/s,on=0s,off=1s", "on= must be positive"},
		{"onoff:10/s,on=2562047h,off=2562047h", "longer than time.Duration can hold"},
		{"spike:", "empty argument"},
		{"spike:cost=2", "spike needs at least one N@AT"},
		{"spike:100", "spike wants N@AT"},
		{"spike:0@1s", `spike count "0"`},
		{"spike:10@soon", `spike instant "soon" is not a duration`},
		{"spike:10@1s,from=1s", "spike takes its instants as N@AT"},
		{"poisson:10/fortnight", "neither a unit"},
		{"csv:", "csv needs a file"},
		{"steady:10/s,keys=0", `keys "0" is not a whole number from 1`},
		{"steady:10/s,keys=many", `keys "many" is not a whole number from 1`},
		{"steady:10/s,spread=zipf", "spread= needs keys=N"},
		{"steady:10/s,keys=5,spread=pareto", `spread "pareto": want uniform, zipf or zipf:S`},
		{"steady:10/s,keys=5,spread=zipf:1", `zipf exponent "1" is not a number above 1`},
	} {
		_, err := traffic.Parse(tc.in)
		switch {
		case err == nil:
			t.Errorf("Parse(%q) succeeded, want an error saying %q", tc.in, tc.says)
		case !errors.Is(err, traffic.ErrInvalid):
			t.Errorf("Parse(%q) = %v, not ErrInvalid", tc.in, err)
		case !strings.Contains(err.Error(), tc.says):
			t.Errorf("Parse(%q) = %q, want it to say %q", tc.in, err, tc.says)
		}
	}
}

func TestSteadyIsExact(t *testing.T) {
	// 3 per second: 0, 333333333ns, 666666666ns, 1s, ... never drifting.
	a := gen(t, 2*time.Second, 1, "steady:3/s")
	want := []time.Duration{0, 333333333, 666666666, time.Second, time.Second + 333333333, time.Second + 666666666}
	if got := instants(a); !equal(got, want) {
		t.Errorf("steady:3/s over 2s = %v, want %v", got, want)
	}
	if n := len(gen(t, time.Hour, 1, "steady:1000/s")); n != 3_600_000 {
		t.Errorf("steady:1000/s over 1h gave %d arrivals, want 3600000", n)
	}
	// from and until cut a piece.
	a = gen(t, 10*time.Second, 1, "steady:2/s,from=3s,until=5s")
	if got, want := instants(a), []time.Duration{3 * time.Second, 3500 * time.Millisecond, 4 * time.Second, 4500 * time.Millisecond}; !equal(got, want) {
		t.Errorf("steady with from and until = %v, want %v", got, want)
	}
}

func TestOnOff(t *testing.T) {
	a := gen(t, 7*time.Second, 1, "onoff:2/s,on=1s,off=2s")
	want := []time.Duration{0, 500 * time.Millisecond, 3 * time.Second, 3500 * time.Millisecond, 6 * time.Second, 6500 * time.Millisecond}
	if got := instants(a); !equal(got, want) {
		t.Errorf("onoff = %v, want %v", got, want)
	}
}

func TestSpike(t *testing.T) {
	a := gen(t, time.Minute, 1, "spike:3@2s,2@1s,5@1m")
	want := []time.Duration{time.Second, time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}
	if got := instants(a); !equal(got, want) {
		t.Errorf("spike = %v, want %v (the one at 1m is outside the run)", got, want)
	}
}

func TestPoisson(t *testing.T) {
	a := gen(t, time.Hour, 7, "poisson:100/s")
	// 360,000 expected; the standard deviation is 600, so six of them is
	// more than any seed should stray.
	if n := len(a); math.Abs(float64(n)-360_000) > 3600 {
		t.Errorf("poisson:100/s over 1h gave %d arrivals, want about 360000", n)
	}
	// Exponential gaps: the fraction shorter than the mean is 1-1/e.
	short := 0
	for i := 1; i < len(a); i++ {
		if a[i].At-a[i-1].At < 10*time.Millisecond {
			short++
		}
	}
	if f := float64(short) / float64(len(a)-1); math.Abs(f-(1-1/math.E)) > 0.01 {
		t.Errorf("fraction of gaps below the mean = %.4f, want about %.4f", f, 1-1/math.E)
	}
	if b := gen(t, time.Hour, 7, "poisson:100/s"); !equal(a, b) {
		t.Error("the same seed gave different arrivals")
	}
	if b := gen(t, time.Hour, 8, "poisson:100/s"); equal(a, b) {
		t.Error("another seed gave the same arrivals")
	}
}

func TestCosts(t *testing.T) {
	seen := map[int64]int{}
	for _, x := range gen(t, 10*time.Second, 1, "steady:1000/s,cost=2-4") {
		seen[x.Cost]++
	}
	if len(seen) != 3 || seen[2] < 3000 || seen[3] < 3000 || seen[4] < 3000 {
		t.Errorf("cost=2-4 drew %v, want about 3333 each of 2, 3 and 4", seen)
	}
}

func TestMergeKeepsPatternsApart(t *testing.T) {
	// Adding a pattern leaves the others' arrivals as they were, and ties
	// keep the order the patterns were given.
	alone := gen(t, time.Minute, 3, "poisson:10/s")
	merged := gen(t, time.Minute, 3, "poisson:10/s", "spike:5@30s,cost=9")
	var rest []traffic.Arrival
	var spike []traffic.Arrival
	for _, x := range merged {
		if x.Cost == 9 {
			spike = append(spike, x)
		} else {
			rest = append(rest, x)
		}
	}
	if !equal(alone, rest) || len(spike) != 5 {
		t.Errorf("merging a spike changed the poisson arrivals (%d vs %d) or lost the spike (%d)", len(alone), len(rest), len(spike))
	}
	for i := 1; i < len(merged); i++ {
		if merged[i].At < merged[i-1].At {
			t.Fatalf("arrivals out of order at %d", i)
		}
	}
	tie := gen(t, time.Minute, 1, "spike:2@1s,cost=1", "spike:2@1s,cost=2", "spike:1@1s,cost=3")
	if got := []int64{tie[0].Cost, tie[1].Cost, tie[2].Cost, tie[3].Cost, tie[4].Cost}; !equal(got, []int64{1, 1, 2, 2, 3}) {
		t.Errorf("ties came out as %v, want the patterns' order", got)
	}
}

func TestGenerateErrors(t *testing.T) {
	if _, _, err := traffic.Generate(nil, time.Second, 1, noFiles); !errors.Is(err, traffic.ErrInvalid) {
		t.Errorf("no patterns: %v", err)
	}
	ps := mustParse(t, "steady:1/ns")
	if _, _, err := traffic.Generate(ps, time.Hour, 1, noFiles); !errors.Is(err, traffic.ErrInvalid) || !strings.Contains(err.Error(), "limit of 1000000000") {
		t.Errorf("steady:1/ns over an hour: %v, want the arrival limit", err)
	}
	for _, s := range []string{"poisson:1/ns", "onoff:1/ns,on=1h,off=1s", "spike:1000000001@1s"} {
		if _, _, err := traffic.Generate(mustParse(t, s), time.Hour, 1, noFiles); !errors.Is(err, traffic.ErrInvalid) {
			t.Errorf("%s over an hour: %v, want the arrival limit", s, err)
		}
	}
	if _, d, err := traffic.Generate(mustParse(t, "steady:1/s"), 0, 1, noFiles); err != nil || d != traffic.DefaultDuration {
		t.Errorf("no duration and no csv: %v, %v; want the default", d, err)
	}
	if _, _, err := traffic.Generate(mustParse(t, "steady:1/s"), -1, 1, noFiles); !errors.Is(err, traffic.ErrInvalid) {
		t.Errorf("negative duration: %v", err)
	}
	if _, _, err := traffic.Generate(mustParse(t, "csv:x.csv"), 0, 1, noFiles); err == nil || !strings.Contains(err.Error(), "no file x.csv") {
		t.Errorf("a csv that cannot be read: %v", err)
	}
}

// TestKeysSpreadUniformly checks keys=N: every arrival has one of N keys,
// named k1 ... kN, each taking about its share.
func TestKeysSpreadUniformly(t *testing.T) {
	a, s := keyed(t, "steady:1000/s,keys=10")
	if len(s.Keys) != 11 {
		t.Fatalf("%d keys, want 10 (and the empty one)", len(s.Keys)-1)
	}
	for k, n := range countKeys(a, s) {
		if n < 800 || n > 1200 {
			t.Errorf("key %s has %d of 10000 arrivals, want about 1000", k, n)
		}
	}
}

// TestKeysSpreadByZipf checks spread=zipf: k1 is the busiest, and the
// shares fall with the rank as Zipf's law of exponent 1.5 says (k1's share
// about 1/ζ(1.5) ≈ 38% of 10,000).
func TestKeysSpreadByZipf(t *testing.T) {
	a, s := keyed(t, "steady:1000/s,keys=100,spread=zipf:1.5")
	n := countKeys(a, s)
	if n["k1"] < 3400 || n["k1"] > 4400 || n["k1"] <= n["k2"] || n["k2"] <= n["k5"] || n["k5"] <= n["k50"] {
		t.Errorf("k1 %d, k2 %d, k5 %d, k50 %d of 10000: want falling shares, k1 about 3,900", n["k1"], n["k2"], n["k5"], n["k50"])
	}
}

func keyed(t *testing.T, spec string) ([]traffic.Arrival, traffic.Summary) {
	t.Helper()
	f, err := traffic.Plan{Patterns: mustParse(t, spec), Duration: 10 * time.Second, Seed: 1}.Open()
	if err != nil {
		t.Fatal(err)
	}
	a, err := traffic.Collect(f)
	if err != nil {
		t.Fatal(err)
	}
	return a, f.Summary()
}

func countKeys(a []traffic.Arrival, s traffic.Summary) map[string]int {
	n := map[string]int{}
	for _, x := range a {
		n[s.Keys[x.Key]]++
	}
	return n
}
