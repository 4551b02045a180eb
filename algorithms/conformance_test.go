package algorithms_test

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// The conformance suite runs every algorithm through the same timelines, the
// way go.uber.org/ratelimit's harness runs each of its limiters: a table of
// constructors, a runner that takes at instants t0, t0.Add(100*time.Millisecond)
// and so on, and counts asserted at instants. Nothing sleeps.

// family groups the algorithms that make the same decisions.
type family int

const (
	bucketFamily family = iota // GCRA, TokenBucket, LeakyBucket: the same admissions
	slidingFamily
	fixedFamily
)

// algorithmsUnderTest configures each algorithm comparably, as limit units
// per window: the bucket family at the rate limit/window with capacity limit.
var algorithmsUnderTest = []struct {
	name   string
	family family
	new    func(limit int64, window time.Duration) (algorithms.Algorithm, error)
}{
	{"GCRA", bucketFamily, func(limit int64, window time.Duration) (algorithms.Algorithm, error) {
		return algorithms.NewGCRA(algorithms.Rate{Count: limit, Per: window}, limit)
	}},
	{"TokenBucket", bucketFamily, func(limit int64, window time.Duration) (algorithms.Algorithm, error) {
		return algorithms.NewTokenBucket(algorithms.Rate{Count: limit, Per: window}, limit)
	}},
	{"LeakyBucket", bucketFamily, func(limit int64, window time.Duration) (algorithms.Algorithm, error) {
		return algorithms.NewLeakyBucket(algorithms.Rate{Count: limit, Per: window}, limit)
	}},
	{"SlidingWindow", slidingFamily, func(limit int64, window time.Duration) (algorithms.Algorithm, error) {
		return algorithms.NewSlidingWindow(algorithms.Rate{Count: limit, Per: window})
	}},
	{"FixedWindow", fixedFamily, func(limit int64, window time.Duration) (algorithms.Algorithm, error) {
		return algorithms.NewFixedWindow(algorithms.Rate{Count: limit, Per: window})
	}},
}

// expect holds a value per family.
type expect struct{ bucket, sliding, fixed int64 }

func (e expect) of(f family) int64 { return [...]int64{e.bucket, e.sliding, e.fixed}[f] }

// runConformance runs test once per algorithm in a subtest.
func runConformance(t *testing.T, test func(t *testing.T, r *runner)) {
	for _, c := range algorithmsUnderTest {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			test(t, &runner{t: t, family: c.family, new: c.new})
		})
	}
}

// runner drives one algorithm through a timeline and records what it admits.
type runner struct {
	t        *testing.T
	family   family
	new      func(limit int64, window time.Duration) (algorithms.Algorithm, error)
	alg      algorithms.Algorithm
	limit    int64
	window   time.Duration
	latest   time.Time
	admitted []admission // at instants in ns since t0
}

// create configures the algorithm under test.
func (r *runner) create(limit int64, window time.Duration) algorithms.Algorithm {
	r.t.Helper()
	a, err := r.new(limit, window)
	if err != nil {
		r.t.Fatal(err)
	}
	r.alg, r.limit, r.window, r.latest, r.admitted = a, limit, window, time.Time{}, nil
	return a
}

// allowAt decides cost at instant at and records an admission.
func (r *runner) allowAt(at time.Time, cost int64) algorithms.Decision {
	if at.After(r.latest) {
		r.latest = at
	}
	d := r.alg.AllowAt(at, cost)
	if d.Allowed {
		r.admitted = append(r.admitted, admission{r.latest.Sub(t0).Nanoseconds(), cost})
	}
	return d
}

// takeAll takes unit after unit at instant at until one is denied, and
// returns how many passed.
func (r *runner) takeAll(at time.Time) int64 {
	n := int64(0)
	for r.allowAt(at, 1).Allowed {
		n++
		if n > r.limit {
			r.t.Fatalf("more than the capacity %d passed at %v", r.limit, at.Sub(t0))
		}
	}
	return n
}

// takeEvery takes greedily at from, from+every, ... up to and including to.
func (r *runner) takeEvery(from, to time.Time, every time.Duration) {
	for at := from; !at.After(to); at = at.Add(every) {
		r.takeAll(at)
	}
}

// countAt returns the units admitted at instants up to and including at.
func (r *runner) countAt(at time.Time) int64 {
	var n int64
	for _, a := range r.admitted {
		if a.at <= at.Sub(t0).Nanoseconds() {
			n += a.cost
		}
	}
	return n
}

func (r *runner) assertCountAt(at time.Time, want expect) {
	r.t.Helper()
	if got := r.countAt(at); got != want.of(r.family) {
		r.t.Errorf("admitted by t0+%v: %d, want %d", at.Sub(t0), got, want.of(r.family))
	}
}

// assertBound checks the family's conformance bound over every interval of
// what was admitted.
func (r *runner) assertBound() {
	r.t.Helper()
	var err error
	switch r.family {
	case bucketFamily:
		err = bucketBound(r.limit, algorithms.Rate{Count: r.limit, Per: r.window}, r.admitted)
	case slidingFamily:
		err = slidingBound(r.limit, int64(r.window), r.admitted)
	case fixedFamily:
		err = fixedBound(r.limit, int64(r.window), r.admitted)
	}
	if err != nil {
		r.t.Error(err)
	}
}

// assertRetryAtExact checks on clones that d, denied for cost, names the
// first instant at which cost passes.
func (r *runner) assertRetryAtExact(d algorithms.Decision, cost int64) {
	r.t.Helper()
	if d.Allowed || d.RetryAt.IsZero() {
		r.t.Fatalf("want a denial with a RetryAt, got %s", showDecision(d))
	}
	if got := clone(r.alg).AllowAt(d.RetryAt.Add(-1), cost); got.Allowed {
		r.t.Errorf("cost %d passes at RetryAt-1ns = t0+%v", cost, d.RetryAt.Add(-1).Sub(t0))
	}
	if got := clone(r.alg).AllowAt(d.RetryAt, cost); !got.Allowed {
		r.t.Errorf("cost %d is denied at RetryAt = t0+%v: %s", cost, d.RetryAt.Sub(t0), showDecision(got))
	}
}

func TestConformanceFirstInstantAdmitsCapacity(t *testing.T) {
	runConformance(t, func(t *testing.T, r *runner) {
		for _, limit := range []int64{1, 7, 10, 1000} {
			// Unit costs: exactly the capacity passes at the first instant,
			// also in the middle of a fixed window.
			for _, first := range []time.Time{t0, t0.Add(300 * time.Millisecond)} {
				r.create(limit, time.Second)
				if got := r.takeAll(first); got != limit {
					t.Errorf("limit %d: %d unit costs passed at the first instant, want %d", limit, got, limit)
				}
			}
			// One cost of the whole capacity.
			a := r.create(limit, time.Second)
			if d := a.AllowAt(t0, limit); !d.Allowed || d.Remaining != 0 {
				t.Errorf("limit %d: the first AllowAt(t0, %d) = %s, want allowed with nothing remaining", limit, limit, showDecision(d))
			}
			if d := a.AllowAt(t0, 1); d.Allowed {
				t.Errorf("limit %d: a unit passed after the whole capacity", limit)
			}
		}
	})
}

// TestConformanceGreedyTimeline takes greedily every 10ms for three seconds
// at 10 per second: the bucket family refills one unit per 100ms, the
// windows give the whole limit back at once, each at its own instant.
func TestConformanceGreedyTimeline(t *testing.T) {
	runConformance(t, func(t *testing.T, r *runner) {
		r.create(10, time.Second)
		r.takeEvery(t0, t0.Add(3*time.Second), 10*time.Millisecond)
		r.assertCountAt(t0, expect{bucket: 10, sliding: 10, fixed: 10})
		r.assertCountAt(t0.Add(99*time.Millisecond), expect{bucket: 10, sliding: 10, fixed: 10})
		r.assertCountAt(t0.Add(100*time.Millisecond), expect{bucket: 11, sliding: 10, fixed: 10})
		r.assertCountAt(t0.Add(990*time.Millisecond), expect{bucket: 19, sliding: 10, fixed: 10})
		r.assertCountAt(t0.Add(time.Second), expect{bucket: 20, sliding: 20, fixed: 20})
		r.assertCountAt(t0.Add(1500*time.Millisecond), expect{bucket: 25, sliding: 20, fixed: 20})
		r.assertCountAt(t0.Add(2*time.Second), expect{bucket: 30, sliding: 30, fixed: 30})
		r.assertCountAt(t0.Add(3*time.Second), expect{bucket: 40, sliding: 40, fixed: 40})
		r.assertBound()
	})
}

// TestConformanceSteadyLoadAtTheLimit sends exactly the limit, evenly spaced:
// every algorithm admits all of it, wherever the first request falls.
func TestConformanceSteadyLoadAtTheLimit(t *testing.T) {
	runConformance(t, func(t *testing.T, r *runner) {
		for _, offset := range []time.Duration{0, 50 * time.Millisecond, 99 * time.Millisecond} {
			r.create(10, time.Second)
			for i := range 100 {
				at := t0.Add(offset + time.Duration(i)*100*time.Millisecond)
				if d := r.allowAt(at, 1); !d.Allowed {
					t.Fatalf("offset %v: request %d at t0+%v denied: %s", offset, i, at.Sub(t0), showDecision(d))
				}
			}
			r.assertBound()
		}
	})
}

// TestConformanceNeverAllowed: a cost below 1 or above the capacity is never
// allowed, has zero RetryAt, and changes nothing.
func TestConformanceNeverAllowed(t *testing.T) {
	runConformance(t, func(t *testing.T, r *runner) {
		r.create(10, time.Second)
		r.allowAt(t0, 3)
		for _, cost := range []int64{0, -1, math.MinInt64, 11, 1 << 40, math.MaxInt64} {
			d := r.allowAt(t0, cost)
			if d.Allowed || !d.RetryAt.IsZero() {
				t.Errorf("cost %d: %s, want denied with zero RetryAt", cost, showDecision(d))
			}
			if d.Remaining != 7 {
				t.Errorf("cost %d: Remaining %d, want the 7 still there", cost, d.Remaining)
			}
		}
		if got := r.takeAll(t0); got != 7 {
			t.Errorf("%d units passed after the refused costs, want 7", got)
		}
	})
}

// TestConformanceNoIdleBurst: after any idle spell at most the capacity
// passes at one instant, and exactly the capacity does.
func TestConformanceNoIdleBurst(t *testing.T) {
	runConformance(t, func(t *testing.T, r *runner) {
		r.create(10, time.Second)
		at := t0
		r.takeAll(at)
		for _, idle := range []time.Duration{time.Second, time.Minute, time.Hour, 24 * time.Hour, 10 * 365 * 24 * time.Hour} {
			at = at.Add(idle)
			if got := r.takeAll(at); got != 10 {
				t.Errorf("after %v idle: %d passed at one instant, want 10", idle, got)
			}
		}
		// One cost of the capacity after idling, and nothing beside it.
		at = at.Add(time.Hour)
		if d := r.allowAt(at, 10); !d.Allowed {
			t.Errorf("cost 10 after an hour idle: %s", showDecision(d))
		}
		if d := r.allowAt(at, 1); d.Allowed {
			t.Error("a unit passed beside the whole capacity after an hour idle")
		}
	})
}

// TestConformanceTimeGoingBackwards: an instant earlier than the latest seen
// counts as the latest: the same decision as there, never more admitted.
func TestConformanceTimeGoingBackwards(t *testing.T) {
	runConformance(t, func(t *testing.T, r *runner) {
		latest := t0.Add(time.Second)
		r.create(10, time.Second)
		r.takeEvery(t0, latest, 250*time.Millisecond)
		r.allowAt(latest, 3)
		for _, back := range []time.Time{latest.Add(-1), t0.Add(500 * time.Millisecond), t0, t0.Add(-time.Hour), {}} {
			for _, cost := range []int64{1, 2, 10, 11} {
				want := clone(r.alg).AllowAt(latest, cost)
				if got := clone(r.alg).AllowAt(back, cost); !sameDecision(got, want) {
					t.Errorf("AllowAt(t0%+v, %d) = %s, want the decision at the latest instant t0+1s: %s",
						back.Sub(t0), cost, showDecision(got), showDecision(want))
				}
			}
		}
		// Going back does not bring anything back, and does not stop time
		// going forward again.
		control := clone(r.alg)
		r.takeAll(latest)
		for _, back := range []time.Time{t0.Add(999 * time.Millisecond), t0, {}} {
			if got := r.takeAll(back); got != 0 {
				t.Errorf("%d passed at t0%+v after the latest instant was exhausted", got, back.Sub(t0))
			}
		}
		for control.AllowAt(latest, 1).Allowed {
		}
		next := latest.Add(350 * time.Millisecond)
		if got, want := r.alg.AllowAt(next, 1), control.AllowAt(next, 1); !sameDecision(got, want) {
			t.Errorf("after going back: AllowAt(t0+1.35s, 1) = %s, want %s as if it never had", showDecision(got), showDecision(want))
		}
		r.assertBound()
	})
}

// TestConformanceRetryAtExact: RetryAt names the first nanosecond at which
// the same cost passes, also for rates whose emission interval is not a
// whole number of nanoseconds, and for large costs.
func TestConformanceRetryAtExact(t *testing.T) {
	type retry struct {
		cost int64
		want expect // ns after t0
	}
	cases := []struct {
		limit  int64
		window time.Duration
		retry  []retry // after the capacity was taken at t0
	}{
		{3, time.Second, []retry{ // 333,333,333.33...ns per unit
			{1, expect{bucket: 333_333_334, sliding: 1e9, fixed: 1e9}},
			{2, expect{bucket: 666_666_667, sliding: 1e9, fixed: 1e9}},
			{3, expect{bucket: 1e9, sliding: 1e9, fixed: 1e9}},
		}},
		{7, time.Minute, []retry{ // 8,571,428,571.43ns per unit
			{1, expect{bucket: 8_571_428_572, sliding: 60e9, fixed: 60e9}},
			{4, expect{bucket: 34_285_714_286, sliding: 60e9, fixed: 60e9}},
			{7, expect{bucket: 60e9, sliding: 60e9, fixed: 60e9}},
		}},
		{1000, 500 * time.Millisecond, []retry{
			{1, expect{bucket: 500_000, sliding: 500e6, fixed: 500e6}},
			{999, expect{bucket: 499_500_000, sliding: 500e6, fixed: 500e6}},
		}},
		{1 << 40, time.Hour, []retry{ // a large capacity, 3.27ns per unit
			{1, expect{bucket: 4, sliding: 3600e9, fixed: 3600e9}},
			{1 << 39, expect{bucket: 1800e9, sliding: 3600e9, fixed: 3600e9}},
			{1<<40 - 1, expect{bucket: 3599_999_999_997, sliding: 3600e9, fixed: 3600e9}},
		}},
	}
	runConformance(t, func(t *testing.T, r *runner) {
		for _, c := range cases {
			r.create(c.limit, c.window)
			r.allowAt(t0, c.limit)
			for _, x := range c.retry {
				d := r.alg.AllowAt(t0, x.cost)
				if want := t0.Add(time.Duration(x.want.of(r.family))); !d.RetryAt.Equal(want) {
					t.Errorf("%d/%v: cost %d: RetryAt t0+%dns, want t0+%dns", c.limit, c.window, x.cost, d.RetryAt.Sub(t0), want.Sub(t0))
				}
				r.assertRetryAtExact(d, x.cost)
			}
			// Keep going: take each retry at its RetryAt, for a while.
			at, cost := t0, int64(1)
			for i := range 50 {
				d := r.allowAt(at, cost)
				if !d.Allowed {
					r.assertRetryAtExact(d, cost)
					at = d.RetryAt
					if d = r.allowAt(at, cost); !d.Allowed {
						t.Fatalf("%d/%v: step %d: cost %d denied at its RetryAt", c.limit, c.window, i, cost)
					}
				}
				cost = cost%c.limit + 1 + int64(i%3)*(c.limit/3)
				cost = min(cost, c.limit)
			}
			r.assertBound()
		}
	})
}

// TestConformanceWindowBoundary sends the limit just before a second
// boundary and again at it: only the fixed window lets both through.
func TestConformanceWindowBoundary(t *testing.T) {
	runConformance(t, func(t *testing.T, r *runner) {
		r.create(10, time.Second)
		before, boundary := t0.Add(999*time.Millisecond), t0.Add(time.Second)
		if got := r.takeAll(before); got != 10 {
			t.Errorf("%d passed at t0+999ms, want 10", got)
		}
		got := r.takeAll(boundary)
		if want := (expect{bucket: 0, sliding: 0, fixed: 10}).of(r.family); got != want {
			t.Errorf("%d passed at the boundary t0+1s, want %d", got, want)
		}
		later := t0.Add(1999 * time.Millisecond)
		got = r.takeAll(later)
		if want := (expect{bucket: 10, sliding: 10, fixed: 0}).of(r.family); got != want {
			t.Errorf("%d passed at t0+1.999s, want %d", got, want)
		}
		r.assertBound()
	})
}

// TestConformanceRemainingAndResetAt: Remaining is what still passes at the
// same instant; ResetAt is when the full capacity is back.
func TestConformanceRemainingAndResetAt(t *testing.T) {
	ms := func(n int64) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	steps := []struct {
		at, cost  int64 // ms after t0
		allowed   bool
		remaining expect
		resetAt   expect // ms after t0
	}{
		{250, 4, true, expect{6, 6, 6}, expect{650, 1250, 1000}},
		{300, 2, true, expect{4, 4, 4}, expect{850, 1300, 1000}}, // the bucket holds 4.5
		{300, 5, false, expect{4, 4, 4}, expect{850, 1300, 1000}},
		{300, 11, false, expect{4, 4, 4}, expect{850, 1300, 1000}},
		{900, 1, true, expect{9, 3, 3}, expect{1000, 1900, 1000}},
		{1000, 1, true, expect{9, 2, 9}, expect{1100, 2000, 2000}}, // a new fixed window
		{3000, 0, false, expect{10, 10, 10}, expect{3000, 3000, 3000}},
	}
	runConformance(t, func(t *testing.T, r *runner) {
		r.create(10, time.Second)
		for _, s := range steps {
			d := r.allowAt(ms(s.at), s.cost)
			if d.Allowed != s.allowed || d.Remaining != s.remaining.of(r.family) || !d.ResetAt.Equal(ms(s.resetAt.of(r.family))) {
				t.Errorf("AllowAt(t0+%dms, %d) = %s, want Allowed %v, Remaining %d, ResetAt t0+%dms", s.at, s.cost,
					showDecision(d), s.allowed, s.remaining.of(r.family), s.resetAt.of(r.family))
			}
			// The full capacity passes at ResetAt and not a nanosecond before
			// (unless ResetAt is now).
			if got := clone(r.alg).AllowAt(d.ResetAt, 10); !got.Allowed {
				t.Errorf("after t0+%dms: the capacity is denied at ResetAt", s.at)
			}
			if d.ResetAt.After(ms(s.at)) {
				if got := clone(r.alg).AllowAt(d.ResetAt.Add(-1), 10); got.Allowed {
					t.Errorf("after t0+%dms: the capacity passes a nanosecond before ResetAt", s.at)
				}
			}
		}
	})
}

// TestConformanceCloneIsIndependent: a clone starts with the same state and
// then lives its own life, in both directions.
func TestConformanceCloneIsIndependent(t *testing.T) {
	runConformance(t, func(t *testing.T, r *runner) {
		a := r.create(10, time.Second)
		for i := range 5 { // several distinct instants, so the sliding window keeps several entries
			a.AllowAt(t0.Add(time.Duration(i)*time.Millisecond), 1)
		}
		c := clone(a)
		if c == a {
			t.Fatal("Clone returned the same algorithm")
		}
		if c.Capacity() != a.Capacity() {
			t.Fatalf("clone capacity %d, want %d", c.Capacity(), a.Capacity())
		}
		// The clone has seen t0+4ms too: an earlier instant counts as that.
		if got, want := clone(c).AllowAt(t0, 5), clone(a).AllowAt(t0.Add(4*time.Millisecond), 5); !sameDecision(got, want) {
			t.Errorf("clone at t0: %s, original at t0+4ms: %s", showDecision(got), showDecision(want))
		}
		now := t0.Add(5 * time.Millisecond)
		for range 5 {
			if !a.AllowAt(now, 1).Allowed {
				t.Fatal("the original denied one of its last 5 units")
			}
		}
		if d := a.AllowAt(now, 1); d.Allowed {
			t.Fatal("the original passed an 11th unit")
		}
		// The original is empty; the clone still holds its 5.
		for i := range 5 {
			if d := c.AllowAt(now, 1); !d.Allowed {
				t.Fatalf("the clone denied unit %d after the original took everything: %s", i+1, showDecision(d))
			}
		}
		if d := c.AllowAt(now, 1); d.Allowed {
			t.Fatal("the clone passed an 11th unit")
		}
		// And what the clone took did not come out of the original.
		later := t0.Add(1004 * time.Millisecond)
		if got, want := a.AllowAt(later, 1), c.AllowAt(later, 1); !sameDecision(got, want) {
			t.Errorf("at t0+1.004s: original %s, clone %s", showDecision(got), showDecision(want))
		}
	})
}
