package budget_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/permits"
)

// TestNilOption: a nil option is an error, not a nil dereference.
func TestNilOption(t *testing.T) {
	for _, opts := range [][]budget.Option{{nil}, {budget.WithTTL(budget.MinTTL), nil}} {
		if b, err := budget.New(opts...); !errors.Is(err, permits.ErrInvalidConfig) || b != nil {
			t.Errorf("New(%v) = %v, %v; want ErrInvalidConfig", opts, b, err)
		}
	}
}

// WithPercentCanRetry takes Finagle's range, 0 to 1000 retries per
// request, and is exact at its top.
func TestFinaglesPercentRange(t *testing.T) {
	for _, p := range []float64{0, 1, 10, 100, 999.999999999, 1000} {
		b, err := budget.New(budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(p))
		if err != nil {
			t.Errorf("WithPercentCanRetry(%v) rejected: %v", p, err)
			continue
		}
		b.Deposit()
		if got, want := b.Balance(), int64(p); got != want {
			t.Errorf("WithPercentCanRetry(%v), one deposit: balance %d, want %d", p, got, want)
		}
	}
	for _, p := range []float64{1000.000001, 1e300} {
		if _, err := budget.New(budget.WithPercentCanRetry(p)); !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("WithPercentCanRetry(%v): %v, want ErrInvalidConfig", p, err)
		}
	}
}

// Stats tells an operator what the budget has counted: deposits,
// withdrawals and refusals in the window, with the balance they give. Each
// count leaves with its bucket, like the events the balance counts.
func TestStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		b := mustNew(t, budget.WithName("payments"), budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0.5))
		if got, want := b.Stats(), (budget.Stats{Name: "payments"}); got != want {
			t.Fatalf("a new budget: %+v, want %+v", got, want)
		}
		for range 4 {
			b.Deposit()
		}
		var granted, refused int
		for range 5 {
			if b.TryWithdraw() {
				granted++
			} else {
				refused++
			}
		}
		if granted != 2 || refused != 3 {
			t.Fatalf("granted %d, refused %d; want 2 and 3", granted, refused)
		}
		want := budget.Stats{Name: "payments", Balance: 0, Deposits: 4, Withdrawals: 2, Refusals: 3}
		if got := b.Stats(); got != want {
			t.Fatalf("at 0s: %+v, want %+v", got, want)
		}
		sleepUntil(start, 5*time.Second)
		b.TryWithdraw() // refused, counted in the bucket [5s, 6s)
		want.Refusals++
		if got := b.Stats(); got != want {
			t.Fatalf("at 5s: %+v, want %+v", got, want)
		}
		sleepUntil(start, 10*time.Second) // the bucket [0s, 1s) leaves
		if got, want := b.Stats(), (budget.Stats{Name: "payments", Refusals: 1}); got != want {
			t.Fatalf("at 10s: %+v, want %+v", got, want)
		}
		sleepUntil(start, 15*time.Second)
		if got, want := b.Stats(), (budget.Stats{Name: "payments"}); got != want {
			t.Fatalf("at 15s: %+v, want %+v", got, want)
		}
		if b.Name() != "payments" {
			t.Fatalf("Name() = %q", b.Name())
		}
	})
}

// TestReserveIsNotAFloor: the reserve is not a floor. Withdrawals count against it, so a
// burst of retries drives the balance below the reserve; the reserve comes
// back only as those withdrawals leave the window.
func TestReserveIsNotAFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		b := mustNew(t, budget.WithTTL(time.Second), budget.WithMinRetriesPerSec(3), budget.WithPercentCanRetry(1))
		for range 5 {
			b.Deposit()
		}
		for b.TryWithdraw() {
		}
		if got := b.Stats(); got.Balance != 0 || got.Withdrawals != 8 {
			t.Fatalf("after the burst: %+v, want balance 0 (below the reserve of 3) after 8 withdrawals", got)
		}
		sleepUntil(start, 1*time.Second)
		if got := b.Balance(); got != 3 {
			t.Fatalf("a ttl later: balance %d, want the reserve 3", got)
		}
	})
}

// The budget stays within one allocation size class of 384 bytes.
func TestSize(t *testing.T) {
	if got := unsafe.Sizeof(budget.RetryBudget{}); got > 384 {
		t.Fatalf("a RetryBudget is %d bytes, want at most 384", got)
	}
}
