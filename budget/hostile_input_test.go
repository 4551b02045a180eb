package budget_test

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/permits"
)

func TestHostileBudgetOptions(t *testing.T) {
	bad := []budget.Option{
		nil,
		budget.WithTTL(0), budget.WithTTL(-1), budget.WithTTL(math.MinInt64), budget.WithTTL(math.MaxInt64),
		budget.WithTTL(time.Second - 1), budget.WithTTL(61 * time.Second),
		budget.WithMinRetriesPerSec(-1), budget.WithMinRetriesPerSec(math.MinInt), budget.WithMinRetriesPerSec(math.MaxInt),
		budget.WithMinRetriesPerSec(budget.MaxMinRetriesPerSec + 1),
		budget.WithPercentCanRetry(-1), budget.WithPercentCanRetry(math.NaN()), budget.WithPercentCanRetry(math.Inf(1)),
		budget.WithPercentCanRetry(math.Inf(-1)), budget.WithPercentCanRetry(1000.0000001), budget.WithPercentCanRetry(-1e-300),
	}
	for i, o := range bad {
		b, err := budget.New(o)
		if !errors.Is(err, permits.ErrInvalidConfig) || b != nil {
			t.Errorf("bad option %d: New = %v, %v", i, b, err)
		}
	}
	// extremes that are valid: no overflow in the balance
	b, err := budget.New(budget.WithTTL(budget.MaxTTL), budget.WithMinRetriesPerSec(budget.MaxMinRetriesPerSec), budget.WithPercentCanRetry(budget.MaxPercentCanRetry), budget.WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	want := int64(budget.MaxMinRetriesPerSec) * 60
	if got := b.Balance(); got != want {
		t.Errorf("Balance = %d, want %d", got, want)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20000; i++ {
				b.Deposit()
			}
		}()
	}
	wg.Wait()
	if got := b.Balance(); got != want+80000*1000 {
		t.Errorf("Balance after 80000 deposits at 1000x = %d, want %d", got, want+80000*1000)
	}
	s := b.Stats()
	if s.Deposits != 80000 || s.Balance != b.Balance() {
		t.Errorf("Stats = %+v", s)
	}
	// a zero budget never allows a retry
	z, _ := budget.New(budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0))
	for i := 0; i < 100; i++ {
		z.Deposit()
		if z.TryWithdraw() {
			t.Fatal("zero budget allowed a retry")
		}
	}
	// 0.2: exactly one retry per five deposits, no over-admission.
	f, _ := budget.New(budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0.2))
	for i := 0; i < 10; i++ {
		f.Deposit()
	}
	n := 0
	for f.TryWithdraw() {
		n++
		if n > 100 {
			break
		}
	}
	if n != 2 {
		t.Errorf("10 deposits at 20%% allowed %d retries, want 2", n)
	}
	// tiny percent kept to 9 decimals: 1e-10 is 0
	tiny, err := budget.New(budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(1e-10))
	if err == nil {
		for i := 0; i < 1000; i++ {
			tiny.Deposit()
		}
		if tiny.TryWithdraw() {
			t.Errorf("1e-10 percent allowed a retry after 1000 deposits")
		}
	}
}
