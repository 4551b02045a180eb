package budget_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/budget"
)

// The defaults: 100 retries in ten seconds with no traffic, plus one for
// every five requests; refusals are counted; all of it expires with the
// window.
func TestDefaultsCountRefusalsAndExpireWithTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t)
		for range 9 {
			b.Deposit()
		}
		if got := b.Balance(); got != 101 {
			t.Fatalf("balance %d, want 100 + floor(9/5) = 101", got)
		}
		b.Deposit()
		n := 0
		for b.TryWithdraw() {
			n++
		}
		if n != 102 {
			t.Fatalf("%d withdrawals, want 102", n)
		}
		if s := b.Stats(); s.Deposits != 10 || s.Withdrawals != 102 || s.Refusals != 1 || s.Balance != 0 {
			t.Fatalf("%+v", s)
		}
		time.Sleep(10 * time.Second)
		if s := b.Stats(); s.Deposits != 0 || s.Withdrawals != 0 || s.Refusals != 0 || s.Balance != 100 {
			t.Fatalf("after the ttl: %+v", s)
		}
	})
}

// A ttl that is not a whole number of seconds: the reserve is
// min·ttlSeconds, and the buckets are ttl/10 wide.
func TestFractionalTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		b := mustNew(t, budget.WithTTL(1500*time.Millisecond), budget.WithMinRetriesPerSec(3), budget.WithPercentCanRetry(0.25))
		if got := b.Balance(); got != 4 { // floor(4.5)
			t.Fatalf("reserve %d, want floor(3·1.5) = 4", got)
		}
		b.Deposit()
		b.Deposit() // 4.5 + 0.5 = 5
		if got := b.Balance(); got != 5 {
			t.Fatalf("balance %d, want 5", got)
		}
		sleepUntil(start, 200*time.Millisecond) // bucket [150ms, 300ms)
		b.TryWithdraw()
		sleepUntil(start, 1499*time.Millisecond)
		if got := b.Balance(); got != 4 {
			t.Fatalf("at 1.499s: %d, want 4", got)
		}
		sleepUntil(start, 1500*time.Millisecond) // deposits gone
		if got := b.Balance(); got != 3 {
			t.Fatalf("at 1.5s: %d, want 4 - 1 = 3", got)
		}
		sleepUntil(start, 1650*time.Millisecond) // the withdrawal's bucket leaves
		if got := b.Balance(); got != 4 {
			t.Fatalf("at 1.65s: %d, want 4", got)
		}
	})
}

// Concurrent withdrawals never take more than the balance.
func TestConcurrentWithdrawals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0.5))
		for range 100 {
			b.Deposit()
		}
		var ok atomic.Int64
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					if b.TryWithdraw() {
						ok.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 50 {
			t.Fatalf("%d withdrawals, want 50", ok.Load())
		}
		if s := b.Stats(); s.Withdrawals != 50 || s.Refusals != 150 || s.Balance != 0 {
			t.Fatalf("%+v", s)
		}
	})
}
