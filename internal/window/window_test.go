package window_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/window"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Offsets from the owner's origin read as a timeline: ms(500) is 0.5s after
// the owner was made.
func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func one() window.Counts { return window.Counts{1, 0} }

func TestBucketEdge(t *testing.T) {
	w := window.New(10 * time.Second)
	w.Add(ms(500), one())
	if got := w.Totals(ms(9999)); got[0] != 1 {
		t.Fatalf("at 9.999s: totals %v, want the event made at 0.5s to count", got)
	}
	if got := w.Totals(ms(10000)); got[0] != 0 {
		t.Fatalf("at 10.0s: totals %v, want the bucket [0s, 1s) gone", got)
	}
}

func TestExpiredBucketReleasesOnlyItsOwnCounts(t *testing.T) {
	w := window.New(10 * time.Second)
	w.Add(ms(900), window.Counts{1, 0})
	w.Add(ms(1000), window.Counts{0, 1})
	w.Add(ms(1999), window.Counts{0, 1})
	if got := w.Totals(ms(10000)); got != (window.Counts{0, 2}) {
		t.Fatalf("at 10s: %v, want {0 2}", got)
	}
	if got := w.Totals(ms(11000)); got != (window.Counts{}) {
		t.Fatalf("at 11s: %v, want {0 0}", got)
	}
}

// A width that is not a multiple of 10 ns still gets exact edges:
// bucket k starts at ceil(k·width/10).
func TestOddWidthEdges(t *testing.T) {
	w := window.New(15 * time.Nanosecond)
	starts := []time.Duration{0, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18}
	for k, start := range starts[:len(starts)-1] {
		for d := start; d < starts[k+1]; d++ {
			if got := w.BucketStart(d); got != start {
				t.Fatalf("offset %v: bucket starts at %v, want %v", d, got, start)
			}
		}
	}
	// An event at 1ns (bucket 0) counts until 15ns exactly.
	w.Add(1, one())
	if got := w.Totals(14); got[0] != 1 {
		t.Fatalf("at 14ns: %v, want 1", got)
	}
	if got := w.Totals(15); got[0] != 0 {
		t.Fatalf("at 15ns: %v, want 0", got)
	}
}

func TestIdleSpellResetsEverything(t *testing.T) {
	w := window.New(10 * time.Second)
	for i := range int64(100) {
		w.Add(ms(100*i), window.Counts{1, 2})
	}
	if got := w.Totals(ms(10000)); got != (window.Counts{90, 180}) {
		t.Fatalf("at 10s: %v, want {90 180}", got)
	}
	if got := w.Totals(time.Hour); got != (window.Counts{}) {
		t.Fatalf("after an hour: %v, want zero", got)
	}
	if w.BucketSum() != w.RunningTotals() {
		t.Fatalf("bucket sum %v != totals %v", w.BucketSum(), w.RunningTotals())
	}
	// The window keeps its alignment after the idle spell.
	w.Add(time.Hour+ms(500), one())
	if got := w.Totals(time.Hour + ms(9999)); got[0] != 1 {
		t.Fatalf("%v, want 1", got)
	}
	if got := w.Totals(time.Hour + ms(10000)); got[0] != 0 {
		t.Fatalf("%v, want 0", got)
	}
}

// Sparse traffic, one event just under a bucket width after the previous
// one: each event lives until its bucket's start plus the width, so never
// longer than the width, however sparse the traffic.
func TestSparseTraffic(t *testing.T) {
	w := window.New(10 * time.Second)
	step := time.Second - time.Nanosecond
	for i := range 40 {
		now := time.Duration(i) * step
		w.Add(now, one())
		// Event j, in the bucket of whole second floor(j·step), counts until
		// that second plus 10s.
		var want int64
		for j := 0; j <= i; j++ {
			e := time.Duration(j) * step
			if now < e.Truncate(time.Second)+10*time.Second {
				want++
				if now-e >= 10*time.Second {
					t.Fatalf("reference bug: an event counted %v after it was made", now-e)
				}
			}
		}
		if got := w.Totals(now); got[0] != want {
			t.Fatalf("event %d at %v: totals %d, want %d", i, now, got[0], want)
		}
	}
}

// Time going backwards advances nothing: events count in the current bucket.
func TestClockBackwards(t *testing.T) {
	w := window.New(10 * time.Second)
	w.Add(ms(5500), one())
	w.Add(ms(1000), one()) // goes to the bucket [5s, 6s)
	if got := w.Totals(ms(2000)); got[0] != 2 {
		t.Fatalf("%v, want 2", got)
	}
	w.Add(-time.Hour, one()) // before the origin
	if got := w.Totals(ms(14999)); got[0] != 3 {
		t.Fatalf("at 14.999s: %v, want 3", got)
	}
	if got := w.Totals(ms(15000)); got[0] != 0 {
		t.Fatalf("at 15s: %v, want 0", got)
	}
}

func TestReset(t *testing.T) {
	w := window.New(10 * time.Second)
	w.Add(ms(2500), window.Counts{3, 4})
	w.Reset()
	if got := w.Totals(ms(2600)); got != (window.Counts{}) {
		t.Fatalf("after Reset: %v", got)
	}
	w.Add(ms(2700), one()) // same alignment: expires at 12s
	if got := w.Totals(ms(11999)); got[0] != 1 {
		t.Fatalf("at 11.999s: %v, want 1", got)
	}
	if got := w.Totals(ms(12000)); got[0] != 0 {
		t.Fatalf("at 12s: %v, want 0", got)
	}
}

func TestNewPanicsOnBadWidth(t *testing.T) {
	for _, width := range []time.Duration{0, -time.Second, 9, window.MaxWidth + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%v) did not panic", width)
				}
			}()
			window.New(width)
		}()
	}
}

// reference keeps every event's offset and says which totals are possible
// when an event stops counting anywhere between 0.9·width and width after it
// was made.
type reference struct {
	width  time.Duration
	events []refEvent
}

type refEvent struct {
	at time.Duration
	c  window.Counts
}

// bounds returns the totals counting only the events that surely still count
// (made at most 0.9·width ago) and all that may (less than width ago).
func (r *reference) bounds(now time.Duration) (lo, hi window.Counts) {
	sure := r.width * 9 / 10
	keep := r.events[:0]
	for _, e := range r.events {
		age := now - e.at
		if age >= r.width {
			continue
		}
		keep = append(keep, e)
		hi = hi.Add(e.c)
		if age <= sure {
			lo = lo.Add(e.c)
		}
	}
	r.events = keep
	return lo, hi
}

// TestPropertyAgainstTimestamps is the property the breaker's rate mode
// relies on: the window's totals are always totals that a reference keeping
// every timestamp allows.
func TestPropertyAgainstTimestamps(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (rand.NewPCG(seed, 0))", seed)
		}
	})
	for run := range 200 {
		width := time.Duration(1+rng.IntN(100)) * 10 * time.Millisecond
		w := window.New(width)
		ref := &reference{width: width}
		now := time.Duration(rng.Int64N(int64(time.Second)))
		for step := range 500 {
			switch r := rng.IntN(10); {
			case r < 6:
				now += time.Duration(rng.Int64N(int64(width / 5)))
			case r < 7:
				now += time.Duration(rng.Int64N(int64(3 * width)))
			}
			c := window.Counts{rng.Int64N(3), rng.Int64N(3), rng.Int64N(3)}
			w.Add(now, c)
			ref.events = append(ref.events, refEvent{now, c})
			got := w.Totals(now)
			lo, hi := ref.bounds(now)
			for i := range got {
				if got[i] < lo[i] || got[i] > hi[i] {
					t.Fatalf("run %d step %d (width %v, at %v): totals %v outside [%v, %v]",
						run, step, width, now, got, lo, hi)
				}
			}
			if w.BucketSum() != got {
				t.Fatalf("run %d step %d: bucket sum %v != totals %v", run, step, w.BucketSum(), got)
			}
		}
	}
}

func BenchmarkAdd(b *testing.B) {
	w := window.New(10 * time.Second)
	var now time.Duration
	for b.Loop() {
		now += 20 * time.Microsecond // 50k events/s
		w.Add(now, window.Counts{1, 0})
	}
}

func BenchmarkAdvanceAfterIdle(b *testing.B) {
	w := window.New(10 * time.Second)
	var now time.Duration
	for b.Loop() {
		now += 11 * time.Second
		w.Add(now, window.Counts{1, 0})
	}
}
