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

// FixedWindow reads the wall clock and works in any year: windows stay
// aligned to the epoch outside 1678-2262, where Unix nanoseconds no longer
// fit an int64, and an instant after 2116 or before 1824 is not clamped
// into time standing still. Issue 9.
func TestFixedWindowAnyYear(t *testing.T) {
	year := func(y int) time.Time { return time.Date(y, time.January, 1, 0, 0, 0, 0, time.UTC) }
	years := []int{1, 1700, 1825, 1969, 1970, 2026, 2115, 2117, 2262, 2263, 3000, 10_000, 1_000_000}
	for _, y := range years {
		w, _ := algorithms.NewFixedWindow(algorithms.PerSecond(2))
		w.AllowAt(year(y), 2)
		d := w.AllowAt(year(y).Add(time.Second/2), 1)
		if !d.RetryAt.Equal(year(y).Add(time.Second)) {
			t.Errorf("year %d: RetryAt %v, want a second after New Year", y, d.RetryAt.UTC())
		}
		if !w.AllowAt(year(y).Add(time.Second), 2).Allowed {
			t.Errorf("year %d: the next window did not open", y)
		}
		// 7ns windows stay aligned to multiples of 7ns since the epoch.
		w7, _ := algorithms.NewFixedWindow(algorithms.Rate{Count: 1, Per: 7})
		at := year(y).Add(3)
		w7.AllowAt(at, 1)
		if d := w7.AllowAt(at, 1); d.RetryAt.Sub(at) < 1 || d.RetryAt.Sub(at) > 7 || !w7.AllowAt(d.RetryAt, 1).Allowed {
			t.Errorf("year %d, 7ns windows: RetryAt %v after the instant", y, d.RetryAt.Sub(at))
		}
	}
	// One window through all of them, in order: every year opens a window.
	w, _ := algorithms.NewFixedWindow(algorithms.PerSecond(2))
	for _, y := range years {
		if d := w.AllowAt(year(y), 2); !d.Allowed || !d.ResetAt.Equal(year(y).Add(time.Second)) {
			t.Errorf("year %d after the earlier ones: %s, want its window open", y, showDecision(d))
		}
	}
	// Going back to an earlier year is no time passing: the latest window.
	if d := w.AllowAt(year(2026), 1); d.Allowed || !d.RetryAt.Equal(year(1_000_000).Add(time.Second)) {
		t.Errorf("back in 2026 after the year 1,000,000: %s, want the latest window, full", showDecision(d))
	}
}

// No instant, however far from the first, freezes an algorithm: one whose
// first instant is the zero Time (the year 1) decides from 2026 on exactly as
// one that starts in 2026, on its owner's path and on its lock-free one, and
// one that lives for centuries keeps telling instants apart. Before issue 9
// instants were clamped 73 years after the first, where time stood still:
// denials said RetryAt in the year 74 and TryAdmitAt answered a wait of 1ns
// for ever.
func TestFarInstantsDoNotFreeze(t *testing.T) {
	runConformance(t, func(t *testing.T, r *runner) {
		for _, first := range []time.Time{{}, t0.AddDate(-500, 0, 0), t0.Add(-time.Duration(1 << 62))} {
			a, fresh := r.create(3, time.Second), r.create(3, time.Second)
			a.AllowAt(first, 3)
			at := t0
			for i := range 200 {
				cost := int64(1 + i%3)
				got, want := a.AllowAt(at, cost), fresh.AllowAt(at, cost)
				if !sameDecision(got, want) {
					t.Fatalf("first instant %v, AllowAt(t0%+v, %d) = %s, want %s as if it started at t0", first, at.Sub(t0), cost, showDecision(got), showDecision(want))
				}
				if !got.Allowed && got.RetryAt.Before(at) || got.ResetAt.Before(at) {
					t.Fatalf("first instant %v, AllowAt(t0%+v): %s names an instant before now", first, at.Sub(t0), showDecision(got))
				}
				at = at.Add(time.Duration(i%7) * 150 * time.Millisecond)
			}
			if g, ok := a.(algorithms.Gated); ok && g.LockFree() {
				b := r.create(3, time.Second).(algorithms.Gated)
				b.AllowAt(first, 3)
				later := t0.Add(time.Hour)
				for i := range 3 {
					if ok, wait, open := b.TryAdmitAt(later, 1); !ok || !open {
						t.Fatalf("first instant %v: TryAdmitAt(t0+1h) unit %d = %v, wait %v, open %v; want admitted", first, i, ok, wait, open)
					}
				}
				if ok, wait, open := b.TryAdmitAt(later, 1); ok || !open || wait <= 0 || wait > time.Second {
					t.Fatalf("first instant %v: TryAdmitAt(t0+1h) after the limit = %v, wait %v, open %v", first, ok, wait, open)
				}
			}
		}
		// A long life: every few decades the same second admits the limit
		// and the next unit's RetryAt is exact.
		a := r.create(3, time.Second)
		for _, years := range []int{0, 40, 80, 150, 290, 600, 2000} {
			at := t0.AddDate(years, 0, 0)
			if r.family == fixedFamily {
				at = alignedSecond(at)
			}
			if got := countAt(a, at); got != 3 {
				t.Fatalf("t0 + %d years: %d passed, want 3", years, got)
			}
			d := a.AllowAt(at, 1)
			if d.Allowed || d.RetryAt.Sub(at) <= 0 || d.RetryAt.Sub(at) > time.Second {
				t.Fatalf("t0 + %d years: %s, want a RetryAt within a second", years, showDecision(d))
			}
			if !a.AllowAt(d.RetryAt, 1).Allowed {
				t.Fatalf("t0 + %d years: RetryAt %v is not where one more unit passes", years, d.RetryAt.Sub(at))
			}
		}
	})
}

// countAt takes single units at one instant until one is refused.
func countAt(a algorithms.Algorithm, at time.Time) (n int64) {
	for a.AllowAt(at, 1).Allowed {
		n++
	}
	return n
}

// alignedSecond returns the start of the second holding t.
func alignedSecond(t time.Time) time.Time { return t.Add(-time.Duration(t.Nanosecond())) }

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
