package algorithms_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// The refund rule (issue 9): a refund never lets the admissions that were
// not refunded exceed the bound over any interval. Before it, GCRA and the
// buckets gave back the whole cost even when later admissions had been
// placed behind it: at 1/s with burst 1, A at t0, B at t0+1s, refund A, and
// C passed at t0+1s beside B.
func TestRefundGivesBackOnlyWhatLaterAdmissionsHaveNotUsed(t *testing.T) {
	for _, a := range newBucketFamily(t, algorithms.PerSecond(1), 1) {
		r := a.(algorithms.Refunder)
		dA := a.AllowAt(t0, 1)
		dB := a.AllowAt(t0.Add(time.Second), 1)
		if !dA.Allowed || !dB.Allowed {
			t.Fatalf("%T: A %s, B %s; want both admitted", a, showDecision(dA), showDecision(dB))
		}
		if r.RefundAt(t0.Add(time.Second), dA.Receipt) {
			t.Errorf("%T: refunding A at t0+1s gave something back; its slot is over", a)
		}
		if d := a.AllowAt(t0.Add(time.Second), 1); d.Allowed {
			t.Errorf("%T: C passed at t0+1s beside B after A's refund", a)
		}
	}
	// Partly: at 10/s with burst 2, A's slot is [0, 100ms) and B's
	// [100ms, 200ms). Refunding A at t0+50ms frees the 50ms of A's slot that
	// are still ahead, and B's slot moves into them: one more unit passes at
	// t0+50ms, and the next one at t0+150ms.
	for _, a := range newBucketFamily(t, algorithms.PerSecond(10), 2) {
		r := a.(algorithms.Refunder)
		dA := a.AllowAt(t0, 1)
		a.AllowAt(t0, 1)
		if !r.RefundAt(t0.Add(50*time.Millisecond), dA.Receipt) {
			t.Fatalf("%T: refunding A at t0+50ms gave nothing back", a)
		}
		if d := a.AllowAt(t0.Add(50*time.Millisecond), 1); !d.Allowed {
			t.Errorf("%T: after A's refund, AllowAt(t0+50ms) = %s, want allowed", a, showDecision(d))
		}
		if d := a.AllowAt(t0.Add(50*time.Millisecond), 1); d.Allowed || !d.RetryAt.Equal(t0.Add(150*time.Millisecond)) {
			t.Errorf("%T: then AllowAt(t0+50ms) = %s, want denied until t0+150ms", a, showDecision(d))
		}
	}
}

// A refund made before anything else was admitted gives everything back:
// the algorithm then decides as if the admission had never happened.
func TestRefundOfTheLatestAdmissionRestoresTheState(t *testing.T) {
	runConformance(t, func(t *testing.T, r *runner) {
		a := r.create(5, time.Second)
		a.AllowAt(t0, 2)
		before := clone(a)
		d := a.AllowAt(t0.Add(10*time.Millisecond), 3)
		if !d.Allowed || d.Receipt.IsZero() || d.Receipt.Cost != 3 || !d.Receipt.At.Equal(t0.Add(10*time.Millisecond)) {
			t.Fatalf("admission: %s, receipt %+v", showDecision(d), d.Receipt)
		}
		if !a.(algorithms.Refunder).RefundAt(t0.Add(20*time.Millisecond), d.Receipt) {
			t.Fatal("the refund gave nothing back")
		}
		for _, at := range []time.Duration{20 * time.Millisecond, 300 * time.Millisecond, 999 * time.Millisecond, 1500 * time.Millisecond} {
			for _, cost := range []int64{1, 3, 5} {
				got, want := clone(a).AllowAt(t0.Add(at), cost), clone(before).AllowAt(t0.Add(at), cost)
				if !sameDecision(got, want) {
					t.Errorf("after the refund, AllowAt(t0+%v, %d) = %s, want %s as if never admitted", at, cost, showDecision(got), showDecision(want))
				}
			}
		}
	})
}

// A second refund of one receipt, a zero receipt, or a receipt whose cost
// the algorithm could never have admitted, change nothing.
func TestRefundTwiceIsANoOp(t *testing.T) {
	runConformance(t, func(t *testing.T, r *runner) {
		a := r.create(4, time.Second)
		ref := a.(algorithms.Refunder)
		d1 := a.AllowAt(t0, 2)
		a.AllowAt(t0, 2)
		if !ref.RefundAt(t0, d1.Receipt) {
			t.Fatal("the first refund gave nothing back")
		}
		after := clone(a)
		for _, rc := range []algorithms.Receipt{d1.Receipt, {}, {At: t0, Cost: 99, Mark: t0}} {
			if ref.RefundAt(t0, rc) {
				t.Errorf("RefundAt(%+v) gave something back", rc)
			}
		}
		for _, cost := range []int64{1, 2, 3} {
			if got, want := clone(a).AllowAt(t0, cost), clone(after).AllowAt(t0, cost); !sameDecision(got, want) {
				t.Errorf("after repeated refunds, AllowAt(t0, %d) = %s, want %s", cost, showDecision(got), showDecision(want))
			}
		}
		// The clone remembers the refund too.
		if clone(a).(algorithms.Refunder).RefundAt(t0, d1.Receipt) {
			t.Error("a clone accepted a receipt the original had refunded")
		}
	})
}

// TestWideReceiptsAreTheirOwn: above a unit per ns (the wide form), two
// admissions whose TATs fall in one ns used to share a receipt, so settling
// one made the other look settled already.
func TestWideReceiptsAreTheirOwn(t *testing.T) {
	g := newGCRA(t, algorithms.Rate{Count: 1<<31 + 1, Per: time.Second}, 1000)
	if g.LockFree() {
		t.Fatal("expected the wide form")
	}
	d1, d2 := g.AllowAt(t0, 1), g.AllowAt(t0, 1)
	if !d1.Allowed || !d2.Allowed {
		t.Fatal("denied")
	}
	if d1.Receipt == d2.Receipt {
		t.Fatalf("two admissions, one receipt: %+v", d1.Receipt)
	}
	if !g.SettleAt(t0, d1.Receipt, 1) || !g.SettleAt(t0, d2.Receipt, 1) {
		t.Error("each receipt settles once")
	}
	if g.SettleAt(t0, d2.Receipt, 1) {
		t.Error("a receipt settled twice")
	}
}

// TestRefundOfAHugeBurstGivesItBack: with a burst of 2^40 at 1000/s, the TAT
// of a full burst lies beyond the instants the word counts (decades ahead),
// and its refund used to be read as one that ended long ago.
func TestRefundOfAHugeBurstGivesItBack(t *testing.T) {
	g := newGCRA(t, algorithms.PerSecond(1000), 1<<40)
	if !g.LockFree() {
		t.Fatal("expected the one-word form")
	}
	d := g.AllowAt(t0, 1<<40)
	if !d.Allowed {
		t.Fatal("denied")
	}
	if !g.RefundAt(t0, d.Receipt) {
		t.Fatal("the refund of the whole burst gave nothing back")
	}
	if !g.AllowAt(t0, 1<<40).Allowed {
		t.Error("the burst did not come back")
	}
}

// The sliding window's ResetAt follows its events after a refund: the last
// event gone, the window is empty when the one before it leaves.
func TestSlidingWindowResetAtAfterARefund(t *testing.T) {
	w, _ := algorithms.NewSlidingWindow(algorithms.PerMinute(10))
	w.AllowAt(t0, 1)
	d := w.AllowAt(t0.Add(10*time.Second), 2)
	if !w.RefundAt(t0.Add(20*time.Second), d.Receipt) {
		t.Fatal("refund gave nothing back")
	}
	if got := w.AllowAt(t0.Add(20*time.Second), 0); !got.ResetAt.Equal(t0.Add(time.Minute)) || got.Remaining != 9 {
		t.Errorf("after the refund: %s, want Remaining 9 and ResetAt t0+1m", showDecision(got))
	}
}

// The sliding window's memory follows its live entries: a ring grown for a
// million entries goes when they leave the window, and a clone copies only
// what is live (before issue 9: 16 MiB for 1,000,000/hour, even idle).
func TestSlidingWindowMemoryFollowsLiveEntries(t *testing.T) {
	w, _ := algorithms.NewSlidingWindow(algorithms.PerHour(1_000_000))
	for i := range 1_000_000 {
		if !w.AllowAt(t0.Add(time.Duration(i)*time.Microsecond), 1).Allowed {
			t.Fatalf("admission %d refused", i)
		}
	}
	if n := algorithms.SlidingRing(w); n < 1_000_000 {
		t.Fatalf("ring of %d entries for a million admissions", n)
	}
	if n := algorithms.SlidingRing(w.Clone().(*algorithms.SlidingWindow)); n < 1_000_000 {
		t.Fatalf("clone's ring of %d entries", n)
	}
	// Half of them leave: the ring halves at a quarter full, not before.
	w.AllowAt(t0.Add(time.Hour+750*time.Millisecond), 1)
	if n := algorithms.SlidingRing(w); n > 1<<20 || n < 250_001 {
		t.Errorf("a quarter live: ring of %d entries", n)
	}
	w.AllowAt(t0.Add(3*time.Hour), 1)
	if n := algorithms.SlidingRing(w); n > 8 {
		t.Errorf("one live entry: ring of %d entries", n)
	}
	if n := algorithms.SlidingRing(w.Clone().(*algorithms.SlidingWindow)); n > 8 {
		t.Errorf("one live entry: the clone has a ring of %d entries", n)
	}
}

// The fixed window gives a refund back only while the window it was
// counted in lasts.
func TestFixedWindowRefundsOnlyInItsWindow(t *testing.T) {
	w, _ := algorithms.NewFixedWindow(algorithms.PerSecond(2))
	d1 := w.AllowAt(t0, 1)
	d2 := w.AllowAt(t0, 1)
	if !w.RefundAt(t0.Add(500*time.Millisecond), d1.Receipt) || !w.AllowAt(t0.Add(500*time.Millisecond), 1).Allowed {
		t.Fatal("a refund in its window did not give its unit back")
	}
	if w.RefundAt(t0.Add(time.Second), d2.Receipt) {
		t.Error("a refund in the next window gave something back")
	}
	if got := countAt(w, t0.Add(time.Second)); got != 2 {
		t.Errorf("the next window admitted %d, want 2", got)
	}
}

// The property test of refunds: random admissions, on the owner's path and
// the lock-free one, and refunds of random earlier receipts, some twice,
// some long after, checking that the admissions not refunded keep each
// algorithm's bound over every interval, and that no decision names a
// RetryAt or ResetAt before its instant. propertyRuns·propertySteps decisions per algorithm.
func TestPropertyRefunds(t *testing.T) {
	type kind struct {
		name  string
		new   func(rng *rand.Rand) (algorithms.Algorithm, func([]admission) error, string)
		steps int64
	}
	bucket := func(make func(algorithms.Rate, int64) (algorithms.Algorithm, error)) func(rng *rand.Rand) (algorithms.Algorithm, func([]admission) error, string) {
		return func(rng *rand.Rand) (algorithms.Algorithm, func([]admission) error, string) {
			rate, capacity := randomRate(rng), randomCapacity(rng)
			a, err := make(rate, capacity)
			if err != nil {
				t.Fatal(err)
			}
			return a, func(ev []admission) error { return bucketBound(capacity, rate, ev) }, fmt.Sprintf("%v, %d", rate, capacity)
		}
	}
	window := func(make func(algorithms.Rate) (algorithms.Algorithm, error), check func(limit, window int64, ev []admission) error) func(rng *rand.Rand) (algorithms.Algorithm, func([]admission) error, string) {
		return func(rng *rand.Rand) (algorithms.Algorithm, func([]admission) error, string) {
			limit, w := randomCapacity(rng), randomWindow(rng)
			a, err := make(algorithms.Rate{Count: limit, Per: w})
			if err != nil {
				t.Fatal(err)
			}
			return a, func(ev []admission) error { return check(limit, int64(w), ev) }, fmt.Sprintf("%d per %v", limit, w)
		}
	}
	kinds := []kind{
		{"GCRA", bucket(func(r algorithms.Rate, c int64) (algorithms.Algorithm, error) { return algorithms.NewGCRA(r, c) }), 0},
		{"TokenBucket", bucket(func(r algorithms.Rate, c int64) (algorithms.Algorithm, error) { return algorithms.NewTokenBucket(r, c) }), 0},
		{"LeakyBucket", bucket(func(r algorithms.Rate, c int64) (algorithms.Algorithm, error) { return algorithms.NewLeakyBucket(r, c) }), 0},
		{"SlidingWindow", window(func(r algorithms.Rate) (algorithms.Algorithm, error) { return algorithms.NewSlidingWindow(r) }, slidingBound), 0},
		{"FixedWindow", window(func(r algorithms.Rate) (algorithms.Algorithm, error) { return algorithms.NewFixedWindow(r) }, fixedBound), 0},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			decisions, refunded := 0, 0
			for run := range uint64(propertyRuns()) {
				rng, seed := seeded(t.Name(), run)
				a, bound, config := k.new(rng)
				gated, _ := a.(algorithms.Gated)
				ref := a.(algorithms.Refunder)
				capacity := a.Capacity()
				g := &timeline{rng: rng, gap: 1 + rng.Int64N(int64(time.Millisecond)), idle: int64(time.Second), capacity: capacity}
				type held struct {
					r        algorithms.Receipt
					refunded bool
				}
				var admitted []held
				for range propertySteps {
					n, cost := g.next()
					at := instant(n)
					var d algorithms.Decision
					if gated != nil && rng.IntN(3) == 0 {
						if fd, open := gated.TryAllowAt(at, cost); open {
							d = fd
						} else {
							d = a.AllowAt(at, cost)
						}
					} else {
						d = a.AllowAt(at, cost)
					}
					decisions++
					g.saw(d)
					if !d.Allowed && !d.RetryAt.IsZero() && d.RetryAt.Before(at) || d.ResetAt.Before(at) {
						t.Fatalf("%s\n%s: AllowAt(t0%+dns, %d) = %s names an instant before it", seed, config, n, cost, showDecision(d))
					}
					if d.Allowed {
						admitted = append(admitted, held{r: d.Receipt})
					}
					// Refund one of the recent admissions, now and then; some twice.
					if len(admitted) > 0 && rng.IntN(4) == 0 {
						i := len(admitted) - 1 - rng.IntN(min(len(admitted), 8))
						if ref.RefundAt(instant(g.now), admitted[i].r) {
							if admitted[i].refunded {
								t.Fatalf("%s\n%s: a second refund of admission %d gave something back", seed, config, i)
							}
							refunded++
						}
						admitted[i].refunded = true
					}
				}
				var used []admission
				for _, h := range admitted {
					if !h.refunded {
						used = append(used, admission{h.r.At.Sub(t0).Nanoseconds(), h.r.Cost})
					}
				}
				if err := bound(used); err != nil {
					t.Fatalf("%s\n%s: the admissions not refunded break the bound: %v", seed, config, err)
				}
			}
			if decisions < int(propertyRuns()*propertySteps) || refunded < decisions/50 {
				t.Fatalf("%d decisions, %d refunds that gave something back: too few", decisions, refunded)
			}
		})
	}
}
