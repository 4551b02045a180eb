package algorithms_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// A sliding window's NextAt is when its oldest admission leaves, granted
// or denied; with nothing in it, none.
func TestNextAtOfASlidingWindowIsItsOldestLeaving(t *testing.T) {
	w, _ := algorithms.NewSlidingWindow(algorithms.Rate{Count: 3, Per: time.Second})
	for _, c := range []struct {
		at   time.Duration
		cost int64
		next time.Duration
	}{
		{0, 1, time.Second},
		{100 * time.Millisecond, 2, time.Second},
		{999 * time.Millisecond, 1, time.Second},                   // denied
		{time.Second, 1, 1100 * time.Millisecond},                  // t0's left; t0+100ms's is the oldest
		{3 * time.Second, 4, 0},                                    // never: the window is empty by then
		{3*time.Second + time.Millisecond, 1, 4*time.Second + 1e6}, // alone in it
	} {
		d := w.AllowAt(t0.Add(c.at), c.cost)
		want := time.Time{}
		if c.next > 0 {
			want = t0.Add(c.next)
		}
		if !d.NextAt.Equal(want) {
			t.Errorf("cost %d at t0+%v: NextAt %v, want %v (%s)", c.cost, c.at, d.NextAt, want, showDecision(d))
		}
	}
}

// A fixed window gives everything back when it ends: NextAt is ResetAt,
// granted or denied. The algorithms that refill at a steady rate leave it
// out.
func TestNextAtOfAFixedWindowIsItsEnd(t *testing.T) {
	w, _ := algorithms.NewFixedWindow(algorithms.Rate{Count: 2, Per: time.Minute})
	for i, at := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		d := w.AllowAt(t0.Add(at), 1)
		if !d.NextAt.Equal(t0.Add(time.Minute)) || !d.NextAt.Equal(d.ResetAt) {
			t.Errorf("request %d at t0+%v: %s, NextAt %v, want t0+1m", i, at, showDecision(d), d.NextAt)
		}
	}
	g, _ := algorithms.NewGCRA(algorithms.PerMinute(2), 2)
	if d := g.AllowAt(t0, 1); !d.NextAt.IsZero() {
		t.Errorf("GCRA: NextAt %v, want none", d.NextAt)
	}
}
