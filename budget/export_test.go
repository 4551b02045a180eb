package budget

import (
	"time"

	"github.com/sluicehq/sluice/internal/window"
)

// NewWithClock is New reading time from clock instead of package time, for
// tests that need the clock to go backwards.
func NewWithClock(clock func() time.Time, opts ...Option) (*RetryBudget, error) {
	return newBudget(clock, opts)
}

// CheckTotals reports whether the window's running totals equal the sums of
// its buckets, and returns both.
func (b *RetryBudget) CheckTotals() (ok bool, totals, sums window.Counts) {
	b.mu.Lock()
	defer b.mu.Unlock()
	totals, sums = b.win.RunningTotals(), b.win.BucketSum()
	return totals == sums, totals, sums
}
