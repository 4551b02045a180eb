package breaker

import (
	"time"

	"github.com/sluicehq/sluice/internal/window"
)

// NewWithClock is New reading time from clock instead of package time.
func NewWithClock(clock func() time.Time, opts ...Option) (*Breaker, error) {
	return newBreaker(clock, opts)
}

// WindowTotals returns the rate-mode window's running totals (calls,
// failures) without advancing it, and whether they equal its bucket sums.
func (b *Breaker) WindowTotals() (t window.Counts, consistent bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.win == nil {
		return window.Counts{}, true
	}
	return b.win.RunningTotals(), b.win.RunningTotals() == b.win.BucketSum()
}
