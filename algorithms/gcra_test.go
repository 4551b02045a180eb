package algorithms_test

import (
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

func newGCRA(t testing.TB, rate algorithms.Rate, burst int64) *algorithms.GCRA {
	t.Helper()
	g, err := algorithms.NewGCRA(rate, burst)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// With burst 1 GCRA paces strictly: one unit per emission interval, each at
// the first nanosecond it may pass. Instants are whole nanoseconds and a full
// bucket banks nothing, so a caller that comes back at the earliest instant
// is paced at the interval rounded up (333,333,334ns at 3/s); see
// TestGCRABurstTwoKeepsFractions for the exact long-run rate.
func TestGCRABurstOnePacesStrictly(t *testing.T) {
	for _, rate := range []algorithms.Rate{algorithms.PerSecond(10), algorithms.PerSecond(3), algorithms.PerMinute(7)} {
		g := newGCRA(t, rate, 1)
		interval := time.Duration(gap(rate)) // Per/Count rounded up
		// Ask every nanosecond around each expected instant, and jump between.
		var admitted []time.Duration
		for k := range time.Duration(30) {
			due := k * interval
			for at := max(0, due-3); at <= due+3; at++ {
				if g.AllowAt(t0.Add(at), 1).Allowed {
					admitted = append(admitted, at)
				}
			}
		}
		for k, at := range admitted {
			if want := time.Duration(k) * interval; at != want {
				t.Fatalf("%v burst 1: unit %d at t0+%dns, want t0+%dns", rate, k, at, want)
			}
		}
		if len(admitted) != 30 {
			t.Fatalf("%v burst 1: %d units passed, want 30", rate, len(admitted))
		}
		// Never two units at one instant, even after a long idle spell.
		later := t0.Add(time.Hour)
		if !g.AllowAt(later, 1).Allowed || g.AllowAt(later, 1).Allowed {
			t.Errorf("%v burst 1: want exactly one unit after an hour idle", rate)
		}
	}
}

// With room for a second unit, the fractions of a nanosecond are kept: a
// caller coming back at each RetryAt gets exactly 3 units per second at 3/s,
// forever: unit n >= 1 at ceil((n-1)·333,333,333.33ns), unit 0 beside unit 1.
func TestGCRABurstTwoKeepsFractions(t *testing.T) {
	g := newGCRA(t, algorithms.PerSecond(3), 2)
	at := t0
	for n := int64(0); n < 3000; n++ {
		d := g.AllowAt(at, 1)
		if !d.Allowed {
			at = d.RetryAt
			d = g.AllowAt(at, 1)
		}
		want := t0.Add(time.Duration((max(n-1, 0)*1e9 + 2) / 3))
		if !d.Allowed || !at.Equal(want) {
			t.Fatalf("unit %d at t0+%dns (%s), want t0+%dns", n, at.Sub(t0), showDecision(d), want.Sub(t0))
		}
	}
}

// TestGCRAGate walks the Gated protocol: the fast path decides while the
// gate is open, the owner closes it in the same step as a denial, keeps it
// closed while admitting, and reopens it.
func TestGCRAGate(t *testing.T) {
	g := newGCRA(t, algorithms.PerSecond(10), 10)
	var _ algorithms.Gated = g

	for i := range 10 {
		if d, open := g.TryAllowAt(t0, 1); !open || !d.Allowed {
			t.Fatalf("TryAllowAt unit %d on a fresh GCRA: %s, open %v", i, showDecision(d), open)
		}
	}
	// A fast-path denial reports the gate open and leaves it open.
	d, open := g.TryAllowAt(t0, 1)
	if !open || d.Allowed || !d.RetryAt.Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("TryAllowAt when empty: %s, open %v; want denied, RetryAt t0+100ms, open", showDecision(d), open)
	}
	// AllowOrCloseAt allows without closing.
	if d := g.AllowOrCloseAt(t0.Add(100*time.Millisecond), 1); !d.Allowed {
		t.Fatalf("AllowOrCloseAt at t0+100ms: %s", showDecision(d))
	}
	if _, open := g.TryAllowAt(t0.Add(100*time.Millisecond), 1); !open {
		t.Fatal("an allowed AllowOrCloseAt closed the gate")
	}
	// A cost that can never pass does not close it either.
	if d := g.AllowOrCloseAt(t0.Add(100*time.Millisecond), 11); d.Allowed || !d.RetryAt.IsZero() {
		t.Fatalf("AllowOrCloseAt(cost 11): %s", showDecision(d))
	}
	if _, open := g.TryAllowAt(t0.Add(100*time.Millisecond), 1); !open {
		t.Fatal("AllowOrCloseAt of a cost above the burst closed the gate")
	}
	// A denial closes it, in the same step.
	if d := g.AllowOrCloseAt(t0.Add(100*time.Millisecond), 1); d.Allowed || !d.RetryAt.Equal(t0.Add(200*time.Millisecond)) {
		t.Fatalf("AllowOrCloseAt when empty: %s, want denied until t0+200ms", showDecision(d))
	}
	control := g.Clone() // its gate is open
	if _, open := control.(*algorithms.GCRA).TryAllowAt(t0, 0); !open {
		t.Fatal("a clone of a closed GCRA has its gate closed; want open")
	}
	// Closed: nothing passes on the fast path, whenever, and nothing changes;
	// not even the latest instant, which would move the owner's decisions.
	for _, at := range []time.Time{t0.Add(200 * time.Millisecond), t0.Add(time.Hour)} {
		if d, open := g.TryAllowAt(at, 1); open || d != (algorithms.Decision{}) {
			t.Fatalf("TryAllowAt(t0+%v) with the gate closed: %s, open %v; want the zero Decision, closed", at.Sub(t0), showDecision(d), open)
		}
	}
	// The owner decides while it is closed, as if the fast path had not been
	// tried, and AllowAt keeps it closed.
	at := t0.Add(200 * time.Millisecond)
	if got, want := g.AllowAt(at, 1), control.AllowAt(at, 1); !sameDecision(got, want) {
		t.Fatalf("owner AllowAt(t0+200ms) after closed fast-path calls: %s, want %s", showDecision(got), showDecision(want))
	}
	if _, open := g.TryAllowAt(t0.Add(time.Hour), 1); open {
		t.Fatal("AllowAt opened the gate")
	}
	g.OpenGate()
	g.OpenGate() // idempotent
	if d, open := g.TryAllowAt(t0.Add(300*time.Millisecond), 1); !open || !d.Allowed {
		t.Fatalf("TryAllowAt after OpenGate: %s, open %v", showDecision(d), open)
	}
}

// The rates users type (3/s, 30/s, 7/s, 1,140,000 per minute) have a
// lock-free form, whatever their emission interval in nanoseconds: time is
// counted in fractions of a nanosecond that make it whole. Only
// configurations whose fractions do not fit one word (more than 2^30 units
// per period after reduction, or a burst of more than 2^60 such fractions)
// keep the wide form: TryAllowAt then reports the gate closed and changes
// nothing, while the owner's calls work as usual. Issue 9.
func TestLockFreeAtEveryRateUsersType(t *testing.T) {
	for _, c := range []struct {
		rate  algorithms.Rate
		burst int64
		open  bool
	}{
		{algorithms.PerSecond(3), 2, true},
		{algorithms.PerSecond(7), 2, true},
		{algorithms.PerSecond(30), 2, true},
		{algorithms.PerMinute(1_140_000), 57_000, true},
		{algorithms.PerMinute(7), 2, true},
		{algorithms.Rate{Count: 3, Per: time.Nanosecond}, 2, true},
		{algorithms.Rate{Count: 6, Per: 3 * time.Nanosecond}, 2, true}, // half a nanosecond
		{algorithms.PerSecond(10), 2, true},
		{algorithms.PerMinute(100), 2, true},
		{algorithms.Rate{Count: 1_000_000_007, Per: time.Second}, 2, true},
		{algorithms.Rate{Count: 1<<31 - 1, Per: time.Second}, 2, false},  // 2^31-1 ticks per ns
		{algorithms.Rate{Count: 3, Per: 7}, 1 << 58, false},              // 7·2^58 ticks of burst
		{algorithms.Rate{Count: 1, Per: time.Nanosecond}, 1 << 60, true}, // exactly 2^60 ticks
	} {
		for _, a := range newBucketFamily(t, c.rate, c.burst) {
			g := a.(algorithms.Gated)
			if g.LockFree() != c.open {
				t.Errorf("%T(%v, %d): LockFree() = %v, want %v", a, c.rate, c.burst, g.LockFree(), c.open)
			}
			d, open := g.TryAllowAt(t0, 1)
			if open != c.open {
				t.Errorf("%T(%v, %d): TryAllowAt open = %v, want %v", a, c.rate, c.burst, open, c.open)
				continue
			}
			if !open {
				if d != (algorithms.Decision{}) {
					t.Errorf("%T(%v): closed TryAllowAt returned %s", a, c.rate, showDecision(d))
				}
				if ok, wait, open := g.TryAdmitAt(t0, 1); ok || wait != 0 || open {
					t.Errorf("%T(%v): TryAdmitAt = %v, %v, %v; want closed", a, c.rate, ok, wait, open)
				}
				// Nothing changed: the owner still has the whole burst.
				if !g.AllowAt(t0, min(c.burst, 2)).Allowed {
					t.Errorf("%T(%v): the refused TryAllowAt consumed something", a, c.rate)
				}
			}
		}
	}
}

// newBucketFamily returns a GCRA, a TokenBucket and a LeakyBucket of one
// rate and size.
func newBucketFamily(t testing.TB, rate algorithms.Rate, size int64) []algorithms.Algorithm {
	t.Helper()
	g, err1 := algorithms.NewGCRA(rate, size)
	tb, err2 := algorithms.NewTokenBucket(rate, size)
	lb, err3 := algorithms.NewLeakyBucket(rate, size)
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatalf("%v, %d: %v %v %v", rate, size, err1, err2, err3)
	}
	return []algorithms.Algorithm{g, tb, lb}
}

// TestGCRATryAllowAtConcurrent hammers the fast paths (TryAllowAt and
// TryAdmitAt) from many goroutines
// while the owner decides (and closes the gate) too. Each phase is one
// instant, so the admissions are known exactly: whatever the interleaving,
// a phase admits what a lone caller taking greedily at that instant would.
// Run it with -race.
func TestGCRATryAllowAtConcurrent(t *testing.T) {
	const (
		goroutines = 8
		attempts   = 40 // per goroutine per phase: always more than a phase admits
	)
	rate, burst := algorithms.PerSecond(100), int64(20)
	g := newGCRA(t, rate, burst)
	reference := newGCRA(t, rate, burst)

	steps := []time.Duration{0, 1, 10 * time.Millisecond, 25 * time.Millisecond, 100 * time.Millisecond, time.Second, 3 * time.Millisecond}
	var admitted []admission
	at := t0
	for phase := range 60 {
		at = at.Add(steps[phase%len(steps)])
		cost := int64(1 + phase%3)

		var want int64
		for reference.AllowAt(at, cost).Allowed {
			want += cost
		}

		var (
			wg     sync.WaitGroup
			counts [goroutines + 1]int64
			closed [goroutines]int
		)
		for i := range goroutines {
			wg.Go(func() {
				for range attempts {
					var ok, open bool
					if i%2 == 0 {
						var d algorithms.Decision
						d, open = g.TryAllowAt(at, cost)
						ok = d.Allowed
					} else {
						ok, _, open = g.TryAdmitAt(at, cost)
					}
					switch {
					case !open:
						closed[i]++
					case ok:
						counts[i] += cost
					}
				}
			})
		}
		// The owner, in its own goroutine, closes the gate on its first denial.
		wg.Go(func() {
			for range attempts {
				if g.AllowOrCloseAt(at, cost).Allowed {
					counts[goroutines] += cost
				}
			}
		})
		wg.Wait()

		var got int64
		for _, c := range counts {
			got += c
		}
		if got != want {
			t.Fatalf("phase %d at t0+%v, cost %d: %d admitted, want %d (closed-gate refusals %v)", phase, at.Sub(t0), cost, got, want, closed)
		}
		if got > 0 {
			admitted = append(admitted, admission{at.Sub(t0).Nanoseconds(), got})
		}
		// The owner had a denial: the gate is closed until it reopens it.
		if _, open := g.TryAllowAt(at, cost); open {
			t.Fatalf("phase %d: the gate is open after the owner's denial", phase)
		}
		g.OpenGate()
	}
	if err := bucketBound(burst, rate, admitted); err != nil {
		t.Fatal(err)
	}
}

func TestGCRARateAndCapacity(t *testing.T) {
	g := newGCRA(t, algorithms.PerMinute(7), 3)
	if g.Rate() != algorithms.PerMinute(7) || g.Capacity() != 3 {
		t.Fatalf("Rate() = %v, Capacity() = %d; want 7/m and 3", g.Rate(), g.Capacity())
	}
}

// TryAdmitAt is TryAllowAt without Remaining and ResetAt: admitted exactly
// when TryAllowAt would be, and otherwise a wait that ends at TryAllowAt's
// RetryAt. It refuses (open false) a cost that can never pass, a closed
// gate, and configurations without a lock-free form.
func TestGCRATryAdmitAt(t *testing.T) {
	g := newGCRA(t, algorithms.PerSecond(10), 4)
	twin := g.Clone().(*algorithms.GCRA)
	steps := []struct {
		at   time.Duration
		cost int64
	}{
		{0, 1}, {0, 3}, {0, 1}, {50 * time.Millisecond, 1}, {100 * time.Millisecond, 2},
		{100 * time.Millisecond, 1}, {150 * time.Millisecond, 1}, {time.Second, 4}, {time.Second, 1},
		{1100*time.Millisecond - 1, 1}, {1100 * time.Millisecond, 1},
	}
	for _, s := range steps {
		now := t0.Add(s.at)
		ok, wait, open := g.TryAdmitAt(now, s.cost)
		want, _ := twin.TryAllowAt(now, s.cost)
		if !open || ok != want.Allowed {
			t.Fatalf("TryAdmitAt(t0+%v, %d) = %v, %v, open %v; TryAllowAt says %s", s.at, s.cost, ok, wait, open, showDecision(want))
		}
		if !ok && (wait <= 0 || !now.Add(wait).Equal(want.RetryAt)) {
			t.Fatalf("TryAdmitAt(t0+%v, %d): wait %v, want one ending at RetryAt t0+%v", s.at, s.cost, wait, want.RetryAt.Sub(t0))
		}
	}
	for _, cost := range []int64{0, -1, 5} {
		if ok, wait, open := g.TryAdmitAt(t0.Add(2*time.Second), cost); ok || wait != 0 || open {
			t.Errorf("TryAdmitAt(cost %d) = %v, %v, open %v; want refused", cost, ok, wait, open)
		}
	}
	g.AllowOrCloseAt(t0.Add(1100*time.Millisecond), 4) // denied: closes the gate
	if ok, _, open := g.TryAdmitAt(t0.Add(time.Hour), 1); ok || open {
		t.Error("TryAdmitAt passed a closed gate")
	}
	g.OpenGate()
	if ok, _, open := g.TryAdmitAt(t0.Add(time.Hour), 4); !ok || !open {
		t.Error("TryAdmitAt after OpenGate and an hour idle: want the burst admitted")
	}
	if _, _, open := newGCRA(t, algorithms.Rate{Count: 1<<31 - 1, Per: time.Second}, 4).TryAdmitAt(t0, 1); open {
		t.Error("TryAdmitAt at 2^31-1/s reported open; it has no lock-free form")
	}
}

// TryAdmitAt does not record its instant (a second contended word), so an
// owner's later call at an earlier instant is decided at that instant. That
// is never more permissive than deciding at the latest instant, and the
// decision stays well formed: Remaining is never negative.
func TestGCRATryAdmitAtThenAnEarlierInstant(t *testing.T) {
	g := newGCRA(t, algorithms.PerSecond(10), 10)
	g.AllowAt(t0, 0) // the origin
	if ok, _, _ := g.TryAdmitAt(t0.Add(5*time.Second), 10); !ok {
		t.Fatal("the burst at t0+5s was refused")
	}
	latest := g.Clone().AllowAt(t0.Add(5*time.Second), 1)
	for _, cost := range []int64{1, 10, 11} {
		d := g.Clone().AllowAt(t0.Add(time.Second), cost)
		if d.Allowed || d.Remaining < 0 || d.Remaining > latest.Remaining {
			t.Errorf("AllowAt(t0+1s, %d) after TryAdmitAt at t0+5s: %s; at t0+5s: %s", cost, showDecision(d), showDecision(latest))
		}
		if cost <= 10 && !d.RetryAt.Equal(t0.Add(5*time.Second+time.Duration(cost)*100*time.Millisecond)) {
			t.Errorf("AllowAt(t0+1s, %d): RetryAt t0+%v, want the one at t0+5s", cost, d.RetryAt.Sub(t0))
		}
	}
	if ok, wait, open := g.TryAdmitAt(t0.Add(time.Second), 1); ok || !open || !t0.Add(time.Second).Add(wait).Equal(t0.Add(5100*time.Millisecond)) {
		t.Errorf("TryAdmitAt(t0+1s) = %v, wait %v, open %v; want denied until t0+5.1s", ok, wait, open)
	}
	// An instant from long before the origin: the wait is still positive.
	if ok, wait, open := g.TryAdmitAt(time.Time{}, 1); ok || !open || wait <= 0 {
		t.Errorf("TryAdmitAt(the zero Time) = %v, wait %v, open %v; want denied with a positive wait", ok, wait, open)
	}
}
