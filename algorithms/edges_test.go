package algorithms_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// An admission stops counting in a sliding window exactly window after it
// was made: (now-window, now] is the window.
func TestSlidingWindowIsExact(t *testing.T) {
	w, _ := algorithms.NewSlidingWindow(algorithms.Rate{Count: 3, Per: time.Second})
	w.AllowAt(t0, 1)
	w.AllowAt(t0.Add(100*time.Millisecond), 2)
	d := w.AllowAt(t0.Add(999*time.Millisecond), 1)
	if d.Allowed || !d.RetryAt.Equal(t0.Add(time.Second)) || d.Remaining != 0 || !d.ResetAt.Equal(t0.Add(1100*time.Millisecond)) {
		t.Fatalf("at t0+999ms: %s, want denied until t0+1s, reset at t0+1.1s", showDecision(d))
	}
	if d := w.AllowAt(t0.Add(time.Second-1), 1); d.Allowed {
		t.Fatal("the unit from t0 still counts at t0+1s-1ns, but it passed")
	}
	if d := w.AllowAt(t0.Add(time.Second), 1); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("at t0+1s the unit from t0 has left: %s, want allowed", showDecision(d))
	}
	// Cost 2 must wait for the two units from t0+100ms, not for one unit.
	if d := w.AllowAt(t0.Add(time.Second), 2); !d.RetryAt.Equal(t0.Add(1100 * time.Millisecond)) {
		t.Fatalf("cost 2 at t0+1s: %s, want RetryAt t0+1.1s", showDecision(d))
	}
	// Cost 3 needs the t0+1s unit gone too.
	if d := w.AllowAt(t0.Add(time.Second), 3); !d.RetryAt.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("cost 3 at t0+1s: %s, want RetryAt t0+2s", showDecision(d))
	}
}

// The sliding window keeps one entry per instant; its memory follows the
// admissions in the last window, and stays bounded in a long steady run.
func TestSlidingWindowManyEntries(t *testing.T) {
	w, _ := algorithms.NewSlidingWindow(algorithms.Rate{Count: 1000, Per: time.Second})
	at := t0
	for i := range 100_000 {
		if d := w.AllowAt(at, 1); !d.Allowed {
			t.Fatalf("request %d at t0+%v denied: %s", i, at.Sub(t0), showDecision(d))
		}
		at = at.Add(time.Millisecond)
	}
	// 1000 units in the last second: the 1001st is denied until the oldest leaves.
	if d := w.AllowAt(at.Add(-time.Millisecond), 1); d.Allowed || !d.RetryAt.Equal(at) {
		t.Fatalf("the 1001st unit: %s, want RetryAt t0+%v", showDecision(d), at.Sub(t0))
	}
	allocs := testing.AllocsPerRun(1000, func() {
		w.AllowAt(at, 1)
		at = at.Add(time.Millisecond)
	})
	if allocs != 0 {
		t.Errorf("steady state: %v allocations per AllowAt, want 0", allocs)
	}
}

// Fixed windows are aligned to the Unix epoch, not to the first instant.
func TestFixedWindowEpochAlignment(t *testing.T) {
	w, _ := algorithms.NewFixedWindow(algorithms.Rate{Count: 10, Per: time.Minute})
	start := t0.Add(30 * time.Second) // half-way through a minute
	if d := w.AllowAt(start, 10); !d.Allowed || !d.ResetAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("at t0+30s: %s, want allowed with ResetAt t0+1m", showDecision(d))
	}
	if d := w.AllowAt(t0.Add(time.Minute-1), 1); d.Allowed || !d.RetryAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("at t0+1m-1ns: %s, want denied until t0+1m", showDecision(d))
	}
	if d := w.AllowAt(t0.Add(time.Minute), 10); !d.Allowed {
		t.Fatalf("at t0+1m: %s, want a new window", showDecision(d))
	}

	// A window that does not divide a second: 7ns windows start at multiples
	// of 7ns since the epoch.
	w, _ = algorithms.NewFixedWindow(algorithms.Rate{Count: 1, Per: 7})
	next := time.Unix(0, (t0.UnixNano()/7+1)*7)
	w.AllowAt(t0, 1)
	if d := w.AllowAt(t0, 1); !d.RetryAt.Equal(next) {
		t.Fatalf("7ns windows: RetryAt %v, want %v", d.RetryAt.UnixNano(), next.UnixNano())
	}

	// Before the epoch, windows are still [k·w, (k+1)·w): rounding goes down.
	w, _ = algorithms.NewFixedWindow(algorithms.Rate{Count: 1, Per: time.Second})
	before := time.Unix(0, -500_000_000) // 1969-12-31T23:59:59.5
	w.AllowAt(before, 1)
	if d := w.AllowAt(before, 1); !d.RetryAt.Equal(time.Unix(0, 0)) {
		t.Fatalf("before the epoch: RetryAt %v, want the epoch", d.RetryAt.UTC())
	}
}

// FixedWindow reads the wall clock; it works from 1824 to 2116 and clamps
// instants outside, where time stands still.
func TestFixedWindowYearRange(t *testing.T) {
	year := func(y int) time.Time { return time.Date(y, time.January, 1, 0, 0, 0, 0, time.UTC) }
	for _, y := range []int{1825, 1969, 1970, 2026, 2115} {
		w, _ := algorithms.NewFixedWindow(algorithms.Rate{Count: 2, Per: time.Second})
		w.AllowAt(year(y), 2)
		d := w.AllowAt(year(y), 1)
		if !d.RetryAt.Equal(year(y).Add(time.Second)) {
			t.Errorf("year %d: RetryAt %v, want a second later", y, d.RetryAt.UTC())
		}
		if !w.AllowAt(year(y).Add(time.Second), 2).Allowed {
			t.Errorf("year %d: the next window did not open", y)
		}
	}
	// Past 2116 every instant is the same one: nothing more passes.
	w, _ := algorithms.NewFixedWindow(algorithms.Rate{Count: 2, Per: time.Second})
	w.AllowAt(year(2150), 2)
	if d := w.AllowAt(year(2200), 1); d.Allowed {
		t.Error("an instant after 2116 opened a new window")
	}
	w, _ = algorithms.NewFixedWindow(algorithms.Rate{Count: 2, Per: time.Second})
	w.AllowAt(year(1700), 2)
	if d := w.AllowAt(year(1800), 1); d.Allowed {
		t.Error("an instant before 1824 opened a new window")
	}
	if d := w.AllowAt(year(1900), 2); !d.Allowed {
		t.Error("1900 is in range: its window should be open")
	}
}

// The other algorithms measure instants from the first one they saw and
// clamp them about 73 years (2^61 ns) after it.
func TestInstantsClampAbout73YearsAfterTheFirst(t *testing.T) {
	const clamp = time.Duration(1 << 61)
	runConformance(t, func(t *testing.T, r *runner) {
		if r.family == fixedFamily {
			return // it uses the wall clock; see TestFixedWindowYearRange
		}
		a := r.create(1, time.Minute)
		a.AllowAt(t0, 1)
		if d := a.AllowAt(t0.Add(clamp), 1); !d.Allowed {
			t.Fatalf("at first+2^61ns: %s, want allowed", showDecision(d))
		}
		// Later instants read as first+2^61ns: time stands still there.
		if d := a.AllowAt(t0.Add(clamp+time.Hour), 1); d.Allowed {
			t.Fatal("an instant past the clamp admitted a second unit")
		}
		if d := a.AllowAt(t0.Add(math.MaxInt64), 1); d.Allowed || !d.RetryAt.Equal(t0.Add(clamp+time.Minute)) {
			t.Fatalf("at the end of time: %s, want denied until first+2^61ns+1m", showDecision(d))
		}
	})
}

// Spans up to 2^60 ns (about 36 years) work to the nanosecond.
func TestLongestSpans(t *testing.T) {
	runConformance(t, func(t *testing.T, r *runner) {
		a := r.create(1, maxSpan)
		start := t0
		if r.family == fixedFamily {
			start = time.Unix(0, 0) // a window boundary
		}
		a.AllowAt(start, 1)
		d := a.AllowAt(start, 1)
		if !d.RetryAt.Equal(start.Add(maxSpan)) {
			t.Fatalf("RetryAt %v after the start, want 2^60ns", d.RetryAt.Sub(start))
		}
		r.assertRetryAtExact(d, 1)
	})
}

// Limits and capacities up to MaxInt64 must not wrap: a limit of MaxInt64 is
// a limit, not a licence to admit 2·MaxInt64.
func TestHugeLimitsDoNotWrap(t *testing.T) {
	huge := int64(math.MaxInt64)
	cases := []struct {
		name string
		new  func() (algorithms.Algorithm, error)
	}{
		{"SlidingWindow", func() (algorithms.Algorithm, error) {
			return algorithms.NewSlidingWindow(algorithms.Rate{Count: huge, Per: time.Second})
		}},
		{"FixedWindow", func() (algorithms.Algorithm, error) {
			return algorithms.NewFixedWindow(algorithms.Rate{Count: huge, Per: time.Second})
		}},
		{"GCRA", func() (algorithms.Algorithm, error) { return algorithms.NewGCRA(algorithms.PerSecond(huge), huge) }},
		{"TokenBucket", func() (algorithms.Algorithm, error) {
			return algorithms.NewTokenBucket(algorithms.PerSecond(huge), huge)
		}},
		{"LeakyBucket", func() (algorithms.Algorithm, error) {
			return algorithms.NewLeakyBucket(algorithms.PerSecond(huge), huge)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := c.new()
			if err != nil {
				t.Fatal(err)
			}
			for _, costs := range [][]int64{{huge, huge}, {huge, 1}, {huge - 1, 2}, {huge / 2, huge / 2, 2}, {1 << 62, 1 << 62, 1 << 62}} {
				b := clone(a)
				var sum int64
				for i, cost := range costs {
					d := b.AllowAt(t0, cost)
					if d.Allowed && cost > huge-sum {
						t.Fatalf("costs %v: cost %d (number %d) allowed after %d at one instant", costs, cost, i, sum)
					}
					if d.Allowed {
						sum += cost
					}
					if d.Remaining < 0 || d.Remaining > huge-sum {
						t.Fatalf("costs %v: Remaining %d after %d", costs, d.Remaining, sum)
					}
				}
			}
		})
	}
}

// TestHugeCountsStayExact drives the bucket family with capacities above
// 2^60 units and rates whose Count is near MaxInt64, against the reference:
// the arithmetic must neither saturate nor wrap.
func TestHugeCountsStayExact(t *testing.T) {
	for _, c := range []struct {
		capacity int64
		rate     algorithms.Rate
	}{
		{math.MaxInt64, algorithms.Rate{Count: 1<<62 + 1, Per: 2}},               // 2^61 tokens per ns
		{math.MaxInt64, algorithms.Rate{Count: math.MaxInt64, Per: time.Second}}, // fractions with a 63-bit denominator
		{1 << 62, algorithms.Rate{Count: 1 << 62, Per: 1}},
		{math.MaxInt64, algorithms.Rate{Count: math.MaxInt64 - 1, Per: 3}},
		{1<<61 + 3, algorithms.Rate{Count: 5, Per: 2}},
	} {
		g, err1 := algorithms.NewGCRA(c.rate, c.capacity)
		tb, err2 := algorithms.NewTokenBucket(c.rate, c.capacity)
		lb, err3 := algorithms.NewLeakyBucket(c.rate, c.capacity)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("%v, %d: %v %v %v", c.rate, c.capacity, err1, err2, err3)
		}
		h := &harness{
			t:     t,
			label: fmt.Sprintf("capacity %d, rate %v", c.capacity, c.rate),
			names: []string{"GCRA", "TokenBucket", "LeakyBucket"},
			algs:  []algorithms.Algorithm{g, tb, lb},
			ref:   newRefBucket(c.capacity, c.rate),
			probe: true,
		}
		capacity := c.capacity
		steps := []struct{ at, cost int64 }{
			{0, capacity}, {0, 1}, {1, capacity / 2}, {1, capacity / 2}, {1, capacity / 3}, {2, capacity / 3},
			{2, capacity / 4}, {3, capacity / 4}, {3, capacity/4 + 1}, {3, capacity / 5}, {4, capacity / 7},
			{4, capacity / 7}, {4, capacity / 7}, {5, capacity / 7}, {5, 3}, {6, capacity - 1}, {100, capacity},
			{100, capacity / 3}, {101, capacity / 3}, {101, capacity / 3}, {102, capacity / 3}, {1e9, capacity},
			{1e9, capacity/3 + 1}, {1e9 + 1, capacity / 3}, {1e9 + 1, capacity / 3}, {1e9 + 1, capacity / 3},
		}
		for _, s := range steps {
			h.step(s.at, max(1, s.cost))
		}
		// And wherever the denials say to come back.
		n, cost := int64(2e9), capacity/3
		for range 40 {
			d := h.step(n, cost)
			if !d.Allowed {
				n = d.RetryAt.Sub(t0).Nanoseconds()
			}
			cost = cost/2 + capacity/5
		}
		h.finish()
	}
}
