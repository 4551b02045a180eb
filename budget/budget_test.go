package budget_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/permits"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustNew(t testing.TB, opts ...budget.Option) *budget.RetryBudget {
	t.Helper()
	b, err := budget.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeClock is a clock the test moves by hand; it may go backwards.
type fakeClock = testutil.Clock

var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func newWithClock(t testing.TB, c *fakeClock, opts ...budget.Option) *budget.RetryBudget {
	t.Helper()
	b, err := budget.NewWithClock(c.Now, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sleepUntil sleeps, inside a synctest bubble, until d after start.
func sleepUntil(start time.Time, d time.Duration) { time.Sleep(time.Until(start.Add(d))) }

func TestDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t)
		if got := b.Balance(); got != 100 { // 10 per second for 10 seconds
			t.Fatalf("balance %d, want 100", got)
		}
		for range 50 {
			b.Deposit()
		}
		if got := b.Balance(); got != 110 { // plus 20% of 50
			t.Fatalf("balance %d, want 110", got)
		}
	})
}

func TestInvalidConfig(t *testing.T) {
	for name, opt := range map[string]budget.Option{
		"ttl too short":    budget.WithTTL(999 * time.Millisecond),
		"ttl too long":     budget.WithTTL(61 * time.Second),
		"negative min":     budget.WithMinRetriesPerSec(-1),
		"min too large":    budget.WithMinRetriesPerSec(budget.MaxMinRetriesPerSec + 1),
		"negative percent": budget.WithPercentCanRetry(-0.1),
		"percent too big":  budget.WithPercentCanRetry(1000.01),
		"percent NaN":      budget.WithPercentCanRetry(math.NaN()),
	} {
		b, err := budget.New(opt)
		if !errors.Is(err, permits.ErrInvalidConfig) || b != nil {
			t.Errorf("%s: New = %v, %v; want nil, ErrInvalidConfig", name, b, err)
		}
	}
	for _, opt := range []budget.Option{
		budget.WithTTL(time.Second), budget.WithTTL(time.Minute),
		budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0), budget.WithPercentCanRetry(10),
		budget.WithPercentCanRetry(100), budget.WithPercentCanRetry(budget.MaxPercentCanRetry),
	} {
		if _, err := budget.New(opt); err != nil {
			t.Errorf("valid option rejected: %v", err)
		}
	}
}

func TestNothingNeverRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0))
		for range 1000 {
			b.Deposit()
			if b.TryWithdraw() {
				t.Fatal("a budget with no reserve and no percentage allowed a retry")
			}
			time.Sleep(7 * time.Millisecond)
		}
		if got := b.Balance(); got != 0 {
			t.Fatalf("balance %d, want 0", got)
		}
	})
}

// TestBucketEdge pins the edge from the issue: with ttl 10s, a deposit made
// at 0.5s counts at 9.999s and not at 10.0s.
func TestBucketEdge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		b := mustNew(t, budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(1))
		sleepUntil(start, 500*time.Millisecond)
		b.Deposit()
		sleepUntil(start, 9999*time.Millisecond)
		if got := b.Balance(); got != 1 {
			t.Fatalf("at 9.999s: balance %d, want 1", got)
		}
		sleepUntil(start, 10*time.Second)
		if got := b.Balance(); got != 0 {
			t.Fatalf("at 10.0s: balance %d, want 0", got)
		}
	})
}

func TestWithdrawalsExpireWithTheirBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		b := mustNew(t, budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(1))
		sleepUntil(start, 200*time.Millisecond)
		b.Deposit()
		b.Deposit()
		sleepUntil(start, 3500*time.Millisecond)
		if !b.TryWithdraw() {
			t.Fatal("withdrawal at 3.5s denied with a balance of 2")
		}
		sleepUntil(start, 9999*time.Millisecond)
		if got := b.Balance(); got != 1 {
			t.Fatalf("at 9.999s: balance %d, want 1", got)
		}
		sleepUntil(start, 10*time.Second) // the deposits' bucket [0s, 1s) leaves
		if got := b.Balance(); got != -1 {
			t.Fatalf("at 10.0s: balance %d, want -1 (the withdrawal outlives its deposits)", got)
		}
		if b.TryWithdraw() {
			t.Fatal("withdrawal allowed on a negative balance")
		}
		sleepUntil(start, 12999*time.Millisecond)
		if got := b.Balance(); got != -1 {
			t.Fatalf("at 12.999s: balance %d, want -1", got)
		}
		sleepUntil(start, 13*time.Second) // the withdrawal's bucket [3s, 4s) leaves
		if got := b.Balance(); got != 0 {
			t.Fatalf("at 13.0s: balance %d, want 0", got)
		}
	})
}

// Deposits just under one bucket apart: each lives until its bucket's start
// plus ttl, never longer, so an idle-looking trickle never stretches a
// lifetime and the balance never exceeds what an exact window could give.
func TestSparseTraffic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		b := mustNew(t, budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(1))
		step := time.Second - time.Millisecond
		for i := range 60 {
			sleepUntil(start, time.Duration(i)*step)
			b.Deposit()
			// Deposit j, made at j·step in the bucket of whole second
			// floor(j·step), counts until that second plus 10s.
			now := time.Duration(i) * step
			var want int64
			for j := 0; j <= i; j++ {
				if now < (time.Duration(j)*step).Truncate(time.Second)+10*time.Second {
					want++
				}
			}
			if got := b.Balance(); got != want {
				t.Fatalf("deposit %d at %v: balance %d, want %d", i, now, got, want)
			}
			if want > 11 { // 11 deposits fit in 10s at this pace
				t.Fatalf("%d deposits count at once", want)
			}
		}
	})
}

// A long idle spell resets the window in at most ten bucket resets and
// leaves nothing behind.
func TestIdleSpell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.WithMinRetriesPerSec(1), budget.WithPercentCanRetry(0.5))
		for range 10_000 {
			b.Deposit()
		}
		if got := b.Balance(); got != 5010 {
			t.Fatalf("balance %d, want 5010", got)
		}
		time.Sleep(24 * time.Hour)
		if got := b.Balance(); got != 10 {
			t.Fatalf("after a day: balance %d, want the reserve 10", got)
		}
	})
}

// A clock going backwards is time standing still: nothing expires, and
// events made "in the past" count in the current bucket.
func TestClockBackwards(t *testing.T) {
	var c fakeClock
	b := newWithClock(t, &c, budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(1))
	c.Set(5500 * time.Millisecond)
	b.Deposit()
	c.Set(1 * time.Second) // backwards
	b.Deposit()
	if got := b.Balance(); got != 2 {
		t.Fatalf("balance %d, want 2", got)
	}
	c.Set(-time.Hour) // before the budget was made
	if !b.TryWithdraw() {
		t.Fatal("withdrawal denied")
	}
	c.Set(14999 * time.Millisecond)
	if got := b.Balance(); got != 1 {
		t.Fatalf("at 14.999s: balance %d, want 1", got)
	}
	c.Set(15 * time.Second) // the bucket [5s, 6s) leaves, with all three events
	if got := b.Balance(); got != 0 {
		t.Fatalf("at 15s: balance %d, want 0", got)
	}
	if ok, totals, sums := b.CheckTotals(); !ok {
		t.Fatalf("totals %v != bucket sums %v", totals, sums)
	}
}

// TestFinaglesFrozenTime is Finagle's oracle: with the clock frozen, n
// deposits allow floor(n·percent + min·ttl) retries. Finagle is within one
// of that; this budget's fixed point is exact.
func TestFinaglesFrozenTime(t *testing.T) {
	for _, ttl := range []int{1, 10, 60} {
		for _, min := range []int{0, 1, 10} {
			for _, pctHundredths := range []int{0, 1, 10, 20, 33, 50, 100, 150, 1000} {
				for _, n := range []int{0, 1, 4, 5, 99, 100, 101, 1234} {
					var c fakeClock
					c.Set(time.Duration(n) * time.Millisecond) // any instant
					b := newWithClock(t, &c, budget.WithTTL(time.Duration(ttl)*time.Second),
						budget.WithMinRetriesPerSec(min), budget.WithPercentCanRetry(float64(pctHundredths)/100))
					for range n {
						b.Deposit()
					}
					want := (n*pctHundredths + min*ttl*100) / 100
					got := 0
					for b.TryWithdraw() {
						got++
						if got > want+1 {
							break
						}
					}
					if got != want {
						t.Errorf("ttl %ds, min %d, percent %d%%, %d deposits: %d retries, want %d",
							ttl, min, pctHundredths, n, got, want)
					}
				}
			}
		}
	}
}

// ref keeps the timestamp of every deposit and granted withdrawal and tells
// which balances are possible when an event stops counting anywhere between
// 0.9·ttl and ttl after it was made.
type ref struct {
	ttl                   time.Duration
	min, pctHundredths    int64
	deposits, withdrawals []time.Time
}

// count returns how many of events surely count at now (made at most 0.9·ttl
// ago) and how many may (made less than ttl ago), and forgets the others: the
// property test's clock never goes backwards.
func (r *ref) count(events *[]time.Time, now time.Time) (sure, maybe int64) {
	keep := (*events)[:0]
	for _, at := range *events {
		age := now.Sub(at)
		if age >= r.ttl {
			continue
		}
		keep = append(keep, at)
		maybe++
		if age <= r.ttl*9/10 {
			sure++
		}
	}
	*events = keep
	return sure, maybe
}

func (r *ref) bounds(now time.Time) (lo, hi int64) {
	dSure, dMaybe := r.count(&r.deposits, now)
	wSure, wMaybe := r.count(&r.withdrawals, now)
	reserve := r.min * int64(r.ttl/time.Second) * 100
	lo = (reserve+r.pctHundredths*dSure)/100 - wMaybe
	hi = (reserve+r.pctHundredths*dMaybe)/100 - wSure
	return lo, hi
}

func TestPropertyAgainstTimestamps(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (rand.NewPCG(seed, 0))", seed)
		}
	})
	for run := range 300 {
		ttl := time.Duration(1+rng.IntN(20)) * time.Second
		r := &ref{ttl: ttl, min: int64(rng.IntN(3)), pctHundredths: int64([]int{0, 10, 20, 25, 50, 100, 300}[rng.IntN(7)])}
		var c fakeClock
		c.Set(time.Duration(rng.Int64N(int64(time.Hour))))
		b := newWithClock(t, &c, budget.WithTTL(ttl), budget.WithMinRetriesPerSec(int(r.min)),
			budget.WithPercentCanRetry(float64(r.pctHundredths)/100))
		for step := range 400 {
			switch x := rng.IntN(20); {
			case x < 8:
				c.Advance(time.Duration(rng.Int64N(int64(ttl / 5))))
			case x < 9:
				c.Advance(time.Duration(rng.Int64N(int64(2 * ttl))))
			case x < 14:
				b.Deposit()
				r.deposits = append(r.deposits, c.Now())
			default:
				now := c.Now()
				lo, hi := r.bounds(now)
				got := b.TryWithdraw()
				if got && hi < 1 || !got && lo >= 1 {
					t.Fatalf("run %d step %d (ttl %v, min %d, %d%%, at %v): TryWithdraw = %v, but the balance is in [%d, %d]",
						run, step, ttl, r.min, r.pctHundredths, now.Sub(t0), got, lo, hi)
				}
				if got {
					r.withdrawals = append(r.withdrawals, now)
				}
			}
			lo, hi := r.bounds(c.Now())
			if got := b.Balance(); got < lo || got > hi {
				t.Fatalf("run %d step %d (ttl %v, min %d, %d%%): Balance = %d, want it in [%d, %d]",
					run, step, ttl, r.min, r.pctHundredths, got, lo, hi)
			}
		}
	}
}

// TestStressTotals rotates buckets under 16 goroutines (the clock moves
// 3ms on every read, with a 1s ttl) and checks that the running totals
// always equal the bucket sums. Run it with -race.
func TestStressTotals(t *testing.T) {
	var c fakeClock
	clock := func() time.Time { c.Advance(3 * time.Millisecond); return c.Now() }
	b, err := budget.NewWithClock(clock, budget.WithTTL(time.Second), budget.WithMinRetriesPerSec(5))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var bad atomic.Int64
	for g := range 16 {
		wg.Go(func() {
			for i := range 5000 {
				switch (g + i) % 4 {
				case 0, 1:
					b.Deposit()
				case 2:
					b.TryWithdraw()
				default:
					if ok, _, _ := b.CheckTotals(); !ok {
						bad.Add(1)
					}
					b.Balance()
				}
			}
		})
	}
	wg.Wait()
	if ok, totals, sums := b.CheckTotals(); !ok || bad.Load() != 0 {
		t.Fatalf("totals %v != bucket sums %v (%d inconsistent reads)", totals, sums, bad.Load())
	}
}

func BenchmarkDeposit(b *testing.B) {
	r := mustNew(b)
	for b.Loop() {
		r.Deposit()
	}
}

func BenchmarkTryWithdraw(b *testing.B) {
	r := mustNew(b, budget.WithPercentCanRetry(10))
	for b.Loop() {
		r.Deposit()
		r.TryWithdraw()
	}
}

func BenchmarkDepositParallel(b *testing.B) {
	r := mustNew(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Deposit()
		}
	})
}
