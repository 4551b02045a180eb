package algorithms_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// Issue 13: rates that change while they run, and costs settled after the
// call.

// SetRateAt keeps what was admitted: the units still owed are paid at the
// new rate, and the burst is the new one from then on.
func TestSetRateKeepsTheUnitsOwed(t *testing.T) {
	for _, a := range newBucketFamily(t, algorithms.PerSecond(10), 4) {
		tune := a.(algorithms.Tunable)
		if got := countAt(a, t0); got != 4 {
			t.Fatalf("%T: %d at t0, want the burst of 4", a, got)
		}
		// 4 units owed at 10/s: 400ms. At 1/s they are 4s: nothing until
		// t0+1s, when the burst of 4 has room for one again.
		if err := tune.SetRateAt(t0, algorithms.PerSecond(1)); err != nil {
			t.Fatal(err)
		}
		d := a.AllowAt(t0.Add(500*time.Millisecond), 1)
		if d.Allowed || !d.RetryAt.Equal(t0.Add(time.Second)) {
			t.Errorf("%T after SetRateAt(1/s): %s, want denied until t0+1s", a, showDecision(d))
		}
		if got := countAt(a, t0.Add(4*time.Second)); got != 4 {
			t.Errorf("%T: %d at t0+4s, want the burst again", a, got)
		}
		// A larger burst: room at once for the difference.
		if err := tune.SetBurstAt(t0.Add(4*time.Second), 6); err != nil {
			t.Fatal(err)
		}
		if got := countAt(a, t0.Add(4*time.Second)); got != 2 {
			t.Errorf("%T: %d more after SetBurstAt(6), want 2", a, got)
		}
		if a.Capacity() != 6 {
			t.Errorf("%T: Capacity() = %d after SetBurstAt(6)", a, a.Capacity())
		}
	}
}

// The lock-free paths see the new configuration at once, and a
// configuration that does not fit one word (and back) keeps the units owed.
func TestSetRateIsSeenByTheFastPathAndAcrossForms(t *testing.T) {
	wide := algorithms.Rate{Count: 1<<31 - 1, Per: time.Second} // no one-word form
	for _, a := range newBucketFamily(t, algorithms.PerSecond(10), 2) {
		g := a.(algorithms.Gated)
		tune := a.(algorithms.Tunable)
		if ok, _, _ := g.TryAdmitAt(t0, 2); !ok {
			t.Fatalf("%T: the burst was refused", a)
		}
		if err := tune.SetRateAt(t0, algorithms.PerSecond(2)); err != nil {
			t.Fatal(err)
		}
		// 2 units owed at 2/s: one unit passes at t0+500ms.
		if ok, wait, open := g.TryAdmitAt(t0, 1); ok || !open || wait != 500*time.Millisecond {
			t.Errorf("%T: TryAdmitAt after SetRateAt(2/s) = %v, wait %v, open %v; want a wait of 500ms", a, ok, wait, open)
		}
		if err := tune.SetRateAt(t0, wide); err != nil {
			t.Fatal(err)
		}
		if g.LockFree() {
			t.Errorf("%T at %v reports a lock-free form", a, wide)
		}
		if _, _, open := g.TryAdmitAt(t0, 1); open {
			t.Errorf("%T: the fast path is open in the wide form", a)
		}
		if err := tune.SetRateAt(t0, algorithms.PerSecond(2)); err != nil {
			t.Fatal(err)
		}
		// Still owed: about 2 units (rounded up at each change, never down).
		d := a.AllowAt(t0, 1)
		if d.Allowed || d.RetryAt.Before(t0.Add(500*time.Millisecond)) || d.RetryAt.After(t0.Add(501*time.Millisecond)) {
			t.Errorf("%T after the round trip through the wide form: %s, want denied until about t0+500ms", a, showDecision(d))
		}
		g.OpenGate() // closed on the way back from the wide form until the owner says otherwise
		if ok, _, open := g.TryAdmitAt(t0.Add(time.Second), 2); !ok || !open {
			t.Errorf("%T: TryAdmitAt(t0+1s, 2) = %v, open %v; want the burst back", a, ok, open)
		}
	}
}

// Bad configurations are refused and change nothing; the windows have no
// burst.
func TestSetRateRejectsBadConfigurations(t *testing.T) {
	runConformance(t, func(t *testing.T, r *runner) {
		a := r.create(5, time.Second)
		tune := a.(algorithms.Tunable)
		for _, bad := range []algorithms.Rate{{}, {Count: -1, Per: time.Second}, {Count: 1, Per: -time.Second}} {
			if err := tune.SetRateAt(t0, bad); !errors.Is(err, permits.ErrInvalidConfig) {
				t.Errorf("SetRateAt(%v) = %v, want ErrInvalidConfig", bad, err)
			}
		}
		err := tune.SetBurstAt(t0, 0)
		if !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("SetBurstAt(0) = %v, want ErrInvalidConfig", err)
		}
		if r.family != bucketFamily {
			if err := tune.SetBurstAt(t0, 3); !errors.Is(err, permits.ErrInvalidConfig) {
				t.Errorf("a window's SetBurstAt(3) = %v, want ErrInvalidConfig", err)
			}
		}
		if got := countAt(a, t0); got != 5 {
			t.Errorf("after the refused changes: %d pass, want 5", got)
		}
	})
}

// A window's SetRateAt changes its limit; what it counted stays counted.
func TestWindowsSetRate(t *testing.T) {
	sw, _ := algorithms.NewSlidingWindow(algorithms.PerSecond(4))
	fw, _ := algorithms.NewFixedWindow(algorithms.PerSecond(4))
	for _, a := range []algorithms.Algorithm{sw, fw} {
		a.AllowAt(t0, 3)
		if err := a.(algorithms.Tunable).SetRateAt(t0.Add(100*time.Millisecond), algorithms.PerSecond(5)); err != nil {
			t.Fatal(err)
		}
		if got := countAt(a, t0.Add(100*time.Millisecond)); got != 2 {
			t.Errorf("%T: %d more after raising the limit to 5 with 3 counted, want 2", a, got)
		}
	}
}

// SettleAt with less than admitted gives the difference back by the refund
// rule; with more, charges a debt that later admissions wait for; once.
func TestSettle(t *testing.T) {
	for _, a := range newBucketFamily(t, algorithms.PerSecond(10), 10) {
		s := a.(algorithms.Settler)
		d := a.AllowAt(t0, 5)
		if !s.SettleAt(t0, d.Receipt, 2) {
			t.Fatalf("%T: settling 5 at 2 gave nothing back", a)
		}
		if s.SettleAt(t0, d.Receipt, 1) || a.(algorithms.Refunder).RefundAt(t0, d.Receipt) {
			t.Errorf("%T: a settled receipt settled or refunded again", a)
		}
		if got := countAt(a, t0); got != 8 {
			t.Errorf("%T: %d more after settling 5 at 2, want 8", a, got)
		}
		// 10 used; a receipt of 1 settled at 6: 5 units of debt.
		d = a.AllowAt(t0.Add(100*time.Millisecond), 1)
		if !d.Allowed || !s.SettleAt(t0.Add(100*time.Millisecond), d.Receipt, 6) {
			t.Fatalf("%T: %s, or the debt was refused", a, showDecision(d))
		}
		// TAT: t0+1s (10 used) + 100ms (the unit) + 500ms (the debt) = t0+1.6s;
		// one more unit passes when TAT+100ms <= now+1s: at t0+700ms.
		if d := a.AllowAt(t0.Add(100*time.Millisecond), 1); d.Allowed || !d.RetryAt.Equal(t0.Add(700*time.Millisecond)) {
			t.Errorf("%T after a debt of 5: %s, want denied until t0+700ms", a, showDecision(d))
		}
	}
	sw, _ := algorithms.NewSlidingWindow(algorithms.PerSecond(5))
	fw, _ := algorithms.NewFixedWindow(algorithms.PerSecond(5))
	for _, a := range []algorithms.Algorithm{sw, fw} {
		s := a.(algorithms.Settler)
		d := a.AllowAt(t0, 2)
		if !s.SettleAt(t0, d.Receipt, 4) {
			t.Fatalf("%T: the debt was refused", a)
		}
		if got := countAt(a, t0); got != 1 {
			t.Errorf("%T: %d more after 2 settled at 4 of 5, want 1", a, got)
		}
		d = a.AllowAt(t0.Add(time.Second), 3)
		if !s.SettleAt(t0.Add(time.Second), d.Receipt, 1) || countAt(a, t0.Add(time.Second)) != 4 {
			t.Errorf("%T: 3 settled at 1 did not give 2 back", a)
		}
	}
}

// The property test of settling: random admissions, on the owner's path
// and the lock-free one, settled at random later instants. Settled at less
// than admitted, the units used (the actual costs) keep the plain bound
// over every interval, as refunds do. Settled at more, the debt moves every
// later admission back by exactly its units: a clone that was charged
// retries exactly debt·Per/Count later than one that was not, while both are
// backlogged.
func TestPropertySettle(t *testing.T) {
	for run := range uint64(propertyRuns()) {
		rng, seed := seeded(t.Name(), run)
		rate, capacity := randomRate(rng), 2+randomCapacity(rng)
		for _, a := range newBucketFamily(t, rate, capacity) {
			s := a.(algorithms.Settler)
			var open []algorithms.Receipt
			var used []admission
			g := &timeline{rng: rng, gap: gap(rate), idle: capacity * gap(rate), capacity: capacity}
			for range propertySteps {
				n, cost := g.next()
				d := a.AllowAt(instant(n), max(1, min(cost, capacity)))
				g.saw(d)
				if d.Allowed {
					open = append(open, d.Receipt)
				}
				if len(open) == 0 || rng.IntN(2) == 0 {
					continue
				}
				i := rng.IntN(len(open))
				r := open[i]
				open = append(open[:i], open[i+1:]...)
				actual := rng.Int64N(r.Cost + 1)
				s.SettleAt(instant(g.now), r, actual)
				used = append(used, admission{r.At.Sub(t0).Nanoseconds(), actual})
			}
			for _, r := range open { // never settled: used in full
				used = append(used, admission{r.At.Sub(t0).Nanoseconds(), r.Cost})
			}
			sortAdmissions(used)
			if err := bucketBound(capacity, rate, used); err != nil {
				t.Fatalf("%s\n%T(%v, %d): the actual costs settled below the admitted ones break the bound: %v", seed, a, rate, capacity, err)
			}
			// A debt, while backlogged: exactly its units later.
			x := instant(g.now)
			for a.AllowAt(x, 1).Allowed {
			}
			x = a.AllowAt(x, 1).RetryAt
			plainAlg, charged := clone(a), clone(a)
			var rc algorithms.Receipt
			for d := charged.AllowAt(x, 1); d.Allowed; d = charged.AllowAt(x, 1) {
				rc = d.Receipt
			}
			for plainAlg.AllowAt(x, 1).Allowed {
			}
			debt := 1 + rng.Int64N(capacity)
			if !charged.(algorithms.Settler).SettleAt(x, rc, 1+debt) {
				t.Fatalf("%s: %T refused a debt", seed, a)
			}
			plain, later := plainAlg.AllowAt(x, 1).RetryAt, charged.AllowAt(x, 1).RetryAt
			// debt·Per/Count ns, give or take the rounding of two instants.
			lo := time.Duration(debt * int64(rate.Per) / rate.Count)
			if diff := later.Sub(plain); diff < lo-1 || diff > lo+1 {
				t.Fatalf("%s: %T(%v, %d): a debt of %d moved the next admission by %v, want about %v", seed, a, rate, capacity, debt, diff, lo)
			}
		}
	}
}

func sortAdmissions(a []admission) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].at < a[j-1].at; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
