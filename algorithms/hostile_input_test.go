package algorithms_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/permits"
)

// rdWithin runs fn, failing the test on a panic or if it takes longer than d.

var rdRates = []algorithms.Rate{
	{Count: 0, Per: time.Second},
	{Count: -1, Per: time.Second},
	{Count: math.MinInt64, Per: time.Second},
	{Count: 1, Per: 0},
	{Count: 1, Per: -1},
	{Count: 1, Per: math.MinInt64},
	{Count: 1, Per: 1},
	{Count: math.MaxInt64, Per: 1},
	{Count: 1, Per: math.MaxInt64},
	{Count: math.MaxInt64, Per: math.MaxInt64},
	{Count: math.MaxInt64, Per: time.Second},
	{Count: math.MaxInt64 - 1, Per: math.MaxInt64},
	{Count: 3, Per: time.Second},
	{Count: 1 << 30, Per: time.Second},
	{Count: 1<<30 + 1, Per: time.Second},
	{Count: 7, Per: 36 * 365 * 24 * time.Hour},
}

var rdSizes = []int64{math.MinInt64, -1, 0, 1, 2, 1 << 30, 1<<60 + 1, math.MaxInt64 - 1, math.MaxInt64}

var rdCosts = []int64{math.MinInt64, -1, 0, 1, 2, 1 << 40, math.MaxInt64}

var rdEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

var rdInstants = []time.Time{
	{},
	time.Unix(0, 0),
	time.Unix(-62135596800, 0), // year 1
	time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Hour),
	rdEpoch,
	time.Unix(0, math.MaxInt64),
	time.Unix(0, math.MinInt64),
	time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	rdEpoch.Add(time.Nanosecond),
}

type rdCtor struct {
	name  string
	sized bool
	make  func(r algorithms.Rate, n int64) (algorithms.Algorithm, error)
}

var rdCtors = []rdCtor{
	{"GCRA", true, func(r algorithms.Rate, n int64) (algorithms.Algorithm, error) { return algorithms.NewGCRA(r, n) }},
	{"TokenBucket", true, func(r algorithms.Rate, n int64) (algorithms.Algorithm, error) { return algorithms.NewTokenBucket(r, n) }},
	{"LeakyBucket", true, func(r algorithms.Rate, n int64) (algorithms.Algorithm, error) { return algorithms.NewLeakyBucket(r, n) }},
	{"SlidingWindow", false, func(r algorithms.Rate, n int64) (algorithms.Algorithm, error) {
		return algorithms.NewSlidingWindow(r)
	}},
	{"FixedWindow", false, func(r algorithms.Rate, n int64) (algorithms.Algorithm, error) { return algorithms.NewFixedWindow(r) }},
}

// nilIface reports whether an interface holds a typed nil pointer.
func rdNilAlg(a algorithms.Algorithm) bool {
	if a == nil {
		return true
	}
	switch v := a.(type) {
	case *algorithms.GCRA:
		return v == nil
	case *algorithms.TokenBucket:
		return v == nil
	case *algorithms.LeakyBucket:
		return v == nil
	case *algorithms.SlidingWindow:
		return v == nil
	case *algorithms.FixedWindow:
		return v == nil
	}
	return false
}

// TestHostileConstructors feeds every constructor every hostile rate
// and size: each must either fail with ErrInvalidConfig or return a working
// algorithm whose decisions on hostile costs and instants never panic, never
// name a RetryAt/ResetAt before the instant decided at, and never admit more
// than Capacity in one decision.
func TestHostileConstructors(t *testing.T) {
	for _, c := range rdCtors {
		sizes := rdSizes
		if !c.sized {
			sizes = []int64{0}
		}
		for _, r := range rdRates {
			for _, n := range sizes {
				name := fmt.Sprintf("%s(%d/%d,%d)", c.name, r.Count, int64(r.Per), n)
				var alg algorithms.Algorithm
				var err error
				testutil.Within(t, 5*time.Second, name+" ctor", func() { alg, err = c.make(r, n) })
				if err != nil {
					if !errors.Is(err, permits.ErrInvalidConfig) {
						t.Errorf("%s: error %v does not match ErrInvalidConfig", name, err)
					}
					if !rdNilAlg(alg) {
						t.Errorf("%s: error with non-nil algorithm", name)
					}
					continue
				}
				if r.Validate() != nil {
					t.Errorf("%s: constructor accepted a rate Validate refuses: %v", name, r.Validate())
				}
				if c.sized && n < 1 {
					t.Errorf("%s: constructor accepted size %d < 1", name, n)
				}
				testutil.Within(t, 5*time.Second, name+" decisions", func() { rdExercise(t, name, alg) })
			}
		}
	}
}

func rdExercise(t *testing.T, name string, alg algorithms.Algorithm) {
	t.Helper()
	capa := alg.Capacity()
	if capa < 1 {
		t.Errorf("%s: Capacity %d < 1", name, capa)
	}
	_ = fmt.Sprint(alg)
	if rr, ok := alg.(interface{ Rate() algorithms.Rate }); ok {
		_ = rr.Rate().String()
	}
	var latest time.Time
	for _, now := range rdInstants {
		for _, cost := range rdCosts {
			d := alg.AllowAt(now, cost)
			if now.After(latest) {
				latest = now
			}
			if cost < 1 || cost > capa {
				if d.Allowed {
					t.Errorf("%s: AllowAt(%v, %d) allowed an invalid cost (cap %d)", name, now, cost, capa)
				}
				if !d.RetryAt.IsZero() {
					t.Errorf("%s: AllowAt(%v, %d) impossible cost has RetryAt %v, want zero", name, now, cost, d.RetryAt)
				}
				continue
			}
			if !d.Allowed && d.RetryAt.Before(now) {
				t.Errorf("%s: AllowAt(%v, %d) RetryAt %v before now", name, now, cost, d.RetryAt)
			}
			if !d.Allowed && !d.RetryAt.After(now) && !d.RetryAt.IsZero() {
				// a denial that can be cured must name a later instant
				t.Errorf("%s: AllowAt(%v, %d) denied with RetryAt == now", name, now, cost)
			}
			if d.ResetAt.Before(now) {
				t.Errorf("%s: AllowAt(%v, %d) ResetAt %v before now", name, now, cost, d.ResetAt)
			}
			if d.Remaining < 0 || d.Remaining > capa {
				t.Errorf("%s: AllowAt(%v, %d) Remaining %d out of [0,%d]", name, now, cost, d.Remaining, capa)
			}
			if d.Allowed {
				if rf, ok := alg.(algorithms.Refunder); ok {
					rf.RefundAt(latest, d.Receipt)
					rf.RefundAt(latest, d.Receipt) // twice: harmless
				}
			}
		}
	}
	if g, ok := alg.(algorithms.Gated); ok {
		for _, now := range rdInstants {
			for _, cost := range rdCosts {
				d, open := g.TryAllowAt(now, cost)
				if open && d.Allowed && (cost < 1 || cost > capa) {
					t.Errorf("%s: TryAllowAt(%v,%d) admitted invalid cost", name, now, cost)
				}
				ok, wait, open := g.TryAdmitAt(now, cost)
				if open && ok && (cost < 1 || cost > capa) {
					t.Errorf("%s: TryAdmitAt(%v,%d) admitted invalid cost", name, now, cost)
				}
				if open && !ok && wait <= 0 {
					t.Errorf("%s: TryAdmitAt(%v,%d) denied with wait %v <= 0", name, now, cost, wait)
				}
				_ = g.AllowOrCloseAt(now, cost)
				g.OpenGate()
			}
		}
	}
	if cl, ok := alg.(interface{ Clone() algorithms.Algorithm }); ok {
		_ = cl.Clone().AllowAt(latest, 1)
	}
	if rf, ok := alg.(algorithms.Refunder); ok {
		rf.RefundAt(latest, algorithms.Receipt{})
		for _, r := range []algorithms.Receipt{
			{At: latest, Cost: math.MaxInt64, Mark: time.Unix(1<<62, 0), Frac: math.MaxInt64, Seq: math.MaxInt64},
			{At: time.Time{}, Cost: math.MinInt64, Mark: time.Time{}, Frac: math.MinInt64, Seq: math.MinInt64},
			{At: latest, Cost: -1, Mark: latest, Frac: -1, Seq: -1},
		} {
			if rf.RefundAt(latest, r) {
				// A forged receipt may refund; check that the algorithm did not
				// gain more than its capacity.
				d := alg.AllowAt(latest, capa)
				if d.Allowed && d.Remaining > 0 {
					t.Errorf("%s: forged receipt refund left Remaining %d after admitting capacity", name, d.Remaining)
				}
			}
		}
	}
	if s, ok := alg.(algorithms.Settler); ok {
		d := alg.AllowAt(latest, 1)
		for _, actual := range []int64{math.MinInt64, -1, 0, math.MaxInt64} {
			s.SettleAt(latest, d.Receipt, actual)
		}
		s.SettleAt(latest, algorithms.Receipt{}, math.MaxInt64)
		_ = alg.AllowAt(latest, 1)
	}
	if tu, ok := alg.(algorithms.Tunable); ok {
		for _, r := range rdRates {
			err := tu.SetRateAt(latest, r)
			if err != nil && !errors.Is(err, permits.ErrInvalidConfig) {
				t.Errorf("%s: SetRateAt(%v) error %v does not match ErrInvalidConfig", name, r, err)
			}
			if err == nil && r.Validate() != nil {
				t.Errorf("%s: SetRateAt accepted invalid rate %+v", name, r)
			}
			_ = alg.AllowAt(latest, 1)
		}
		for _, n := range rdSizes {
			err := tu.SetBurstAt(latest, n)
			if err != nil && !errors.Is(err, permits.ErrInvalidConfig) {
				t.Errorf("%s: SetBurstAt(%d) error %v does not match ErrInvalidConfig", name, n, err)
			}
			if err == nil && n < 1 {
				t.Errorf("%s: SetBurstAt accepted %d", name, n)
			}
			_ = alg.AllowAt(latest, 1)
			_ = alg.AllowAt(latest, alg.Capacity())
		}
	}
}

// TestHostileValidate checks Validate against the documented rule.
func TestHostileValidate(t *testing.T) {
	for _, r := range rdRates {
		err := r.Validate()
		bad := r.Count < 1 || r.Per <= 0 || r.Per > 37*365*24*time.Hour
		if bad && err == nil {
			t.Errorf("Validate(%+v) = nil, want error", r)
		}
		if err != nil && !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v, not ErrInvalidConfig", r, err)
		}
		s := r.String()
		if err == nil {
			back, perr := algorithms.ParseRate(s)
			if perr != nil {
				t.Errorf("ParseRate(%q) of valid %+v: %v", s, r, perr)
			} else if back.Count*0 != 0 || (back.Count != r.Count || back.Per != r.Per) {
				// allow equivalent forms
				if float64(back.Count)/float64(back.Per) != float64(r.Count)/float64(r.Per) {
					t.Errorf("ParseRate(String(%+v)) = %+v", r, back)
				}
			}
		}
	}
}

// TestHostileParseRate: every malformed string is ErrInvalidConfig.
func TestHostileParseRate(t *testing.T) {
	bad := []string{
		"", "/", "1/", "/s", "0/s", "-1/s", "1/0s", "1/-1s", "1/0", "abc/s",
		"9223372036854775808/s", "-9223372036854775808/s", "1/9223372036854775807h",
		"1/100000000000000000000ns", "1/2562048h", "1/s/s", " 1/s", "1 / s",
		"1/1e9s", "1/NaN", "1/Inf", "1/5", "1/0.5s", "1/5 minutes minutes",
		"99999999999999999999/minute", "1/99999999999999999999minutes",
		"1/9223372036854775807minutes", "1/1000000days", "1\x00/s", "١/s",
	}
	for _, s := range bad {
		var r algorithms.Rate
		var err error
		testutil.Within(t, time.Second, fmt.Sprintf("ParseRate(%q)", s), func() { r, err = algorithms.ParseRate(s) })
		if err == nil {
			if r.Validate() != nil {
				t.Errorf("ParseRate(%q) = %+v, nil: an invalid rate without error", s, r)
			}
			continue
		}
		if !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("ParseRate(%q) error %v does not match ErrInvalidConfig", s, err)
		}
	}
}

// TestHostileHelpers: PerSecond(0), Every(-1)... are invalid rates
// the constructors refuse.
func TestHostileHelpers(t *testing.T) {
	for _, r := range []algorithms.Rate{
		algorithms.PerSecond(0), algorithms.PerSecond(-1), algorithms.PerMinute(math.MinInt64),
		algorithms.PerHour(0), algorithms.Every(0), algorithms.Every(-time.Second), algorithms.Every(math.MinInt64),
	} {
		if _, err := algorithms.NewGCRA(r, 1); !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("NewGCRA(%+v) err = %v", r, err)
		}
	}
}

// TestHostileNoOverAdmitAcrossHostileInstants: after far-past and far-future
// instants the bound burst + floor(rate·d) still holds over real instants.
func TestHostileNoOverAdmitAcrossHostileInstants(t *testing.T) {
	rate := algorithms.PerSecond(10)
	for _, c := range rdCtors {
		alg, err := c.make(rate, 10)
		if err != nil {
			t.Fatal(err)
		}
		// hostile instants first: far past, zero.
		for _, at := range []time.Time{{}, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)} {
			alg.AllowAt(at, 1)
		}
		start := rdEpoch
		admitted := int64(0)
		for i := 0; i < 1000; i++ {
			now := start.Add(time.Duration(i) * time.Millisecond)
			if alg.AllowAt(now, 1).Allowed {
				admitted++
			}
		}
		// Over [start, start+999ms]: at most 10 + floor(10*0.999) = 19, windows
		// at most 20 (fixed window straddle: at most 2 windows)
		limit := int64(20)
		if admitted > limit {
			t.Errorf("%s: admitted %d in 1s at 10/s burst 10 after hostile instants", c.name, admitted)
		}
		if admitted == 0 {
			t.Errorf("%s: froze: admitted nothing after hostile instants", c.name)
		}
	}
}

// TestHostileFarFutureDoesNotFreeze: a far-future instant must not freeze the
// algorithm for later instants (doc: "no instant ... freezes one").
func TestHostileFarFutureDoesNotFreeze(t *testing.T) {
	rate := algorithms.PerSecond(1)
	for _, c := range rdCtors {
		for _, far := range []time.Time{time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)} {
			alg, err := c.make(rate, 1)
			if err != nil {
				t.Fatal(err)
			}
			d0 := alg.AllowAt(far, 1)
			if !d0.Allowed {
				t.Errorf("%s: first AllowAt(%v) denied", c.name, far)
			}
			// later instants, at the rate, must be admitted
			ok := 0
			for i := 1; i <= 5; i++ {
				if alg.AllowAt(far.Add(time.Duration(i)*time.Second+time.Millisecond), 1).Allowed {
					ok++
				}
			}
			if ok != 5 {
				t.Errorf("%s: after %v admitted %d of 5 spaced a second apart", c.name, far, ok)
			}
		}
	}
}

// TestHostileCells: NewCells with hostile configurations and decisions.
func TestHostileCells(t *testing.T) {
	for _, r := range rdRates {
		for _, n := range rdSizes {
			name := fmt.Sprintf("Cells(%d/%d,%d)", r.Count, int64(r.Per), n)
			var cs *algorithms.Cells
			var err error
			testutil.Within(t, 5*time.Second, name, func() { cs, err = algorithms.NewCells(r, n) })
			if err != nil {
				if !errors.Is(err, permits.ErrInvalidConfig) {
					t.Errorf("%s: %v not ErrInvalidConfig", name, err)
				}
				continue
			}
			testutil.Within(t, 5*time.Second, name+" decisions", func() {
				var cell algorithms.Cell
				capa := cs.Capacity()
				for _, now := range rdInstants {
					cs.Advance(now)
					cs.Refresh(&cell)
					for _, cost := range rdCosts {
						d := cs.AllowAt(&cell, now, cost)
						if d.Allowed && (cost < 1 || cost > capa) {
							t.Errorf("%s: AllowAt(%v,%d) admitted invalid cost", name, now, cost)
						}
						if !d.Allowed && !d.RetryAt.IsZero() && d.RetryAt.Before(now) {
							t.Errorf("%s: AllowAt(%v,%d) RetryAt before now", name, now, cost)
						}
						ok, wait, open := cs.TryAdmitAt(&cell, now, cost)
						if open && ok && (cost < 1 || cost > capa) {
							t.Errorf("%s: TryAdmitAt(%v,%d) admitted invalid cost", name, now, cost)
						}
						if open && !ok && wait <= 0 {
							t.Errorf("%s: TryAdmitAt wait %v", name, wait)
						}
						_, _ = cs.TryAllowAt(&cell, now, cost)
						_, _ = cs.WaitBehindAt(&cell, now, cost)
						_ = cs.AllowOrCloseAt(&cell, now, cost)
						cs.OpenGate(&cell)
					}
					if cs.Retire(&cell, now) {
						cs.Revive(&cell)
					}
				}
				_ = cs.Clone(&cell).AllowAt(time.Now(), 1)
				g := cs.Detach(&cell)
				_ = g.AllowAt(time.Now(), 1)
			})
		}
	}
}

// TestHostileFarInstantJumpIsBounded: the package promises that no instant,
// however far in the past or the future, freezes an algorithm, and that
// decisions never block. A jump between instants ~1.5e11 years apart (both
// representable time.Time values) must still decide in bounded time.
func TestHostileFarInstantJumpIsBounded(t *testing.T) {
	type cfg struct {
		name string
		r    algorithms.Rate
	}
	for _, c := range rdCtors {
		for _, k := range []cfg{{"wide", algorithms.Rate{Count: math.MaxInt64, Per: 1}}, {"10/s", algorithms.PerSecond(10)}} {
			for _, pair := range [][2]time.Time{
				{time.Unix(math.MinInt64/2, 0), rdEpoch}, // far-past first instant, then today
				{rdEpoch, time.Unix(math.MaxInt64/2, 0)}, // today, then far future
			} {
				alg, err := c.make(k.r, 1)
				if err != nil {
					t.Fatal(err)
				}
				alg.AllowAt(pair[0], 1)
				// A liveness bound, not a speed goal: the loop this guards
				// against took 11-22 s a call on a quiet machine; the
				// decision takes microseconds, so seconds to spare.
				name := fmt.Sprintf("%s %s: AllowAt(%d) after AllowAt(%d)", c.name, k.name, pair[1].Year(), pair[0].Year())
				testutil.Within(t, 5*time.Second, name, func() {
					if d := alg.AllowAt(pair[1], 1); !d.Allowed {
						t.Errorf("%s refused the first unit after %v", name, pair[1].Sub(pair[0]))
					}
				})
			}
		}
	}
}
