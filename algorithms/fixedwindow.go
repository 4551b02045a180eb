package algorithms

import "time"

// FixedWindow admits at most limit cost units in each window aligned to the
// Unix epoch ([k·window, (k+1)·window) for whole k), so that processes
// sharing a limit agree on the boundaries. It keeps two words: the current
// window's index and its count. A burst at the end of one window and another
// at the start of the next can pass 2·limit units in a short time: pick
// SlidingWindow or GCRA when that matters.
//
// Unlike the other algorithms it reads the wall-clock part of its instants
// (UnixNano), since alignment to the epoch is the point; instants before the
// latest one it saw still count as that one. Not safe for concurrent use.
type FixedWindow struct {
	limit  int64
	window int64

	started bool
	last    int64 // latest instant seen, Unix ns
	index   int64 // window holding last
	count   int64 // cost admitted in that window
}

// NewFixedWindow returns a fixed window admitting limit.Count units in each
// epoch-aligned window of length limit.Per: NewFixedWindow(PerMinute(100))
// admits 100 units in each calendar minute. It fails, matching
// ErrInvalidConfig, for an invalid rate (a count below 1, a window that is
// not positive or exceeds about 36 years).
func NewFixedWindow(limit Rate) (*FixedWindow, error) {
	if err := limit.Validate(); err != nil {
		return nil, err
	}
	return &FixedWindow{limit: limit.Count, window: int64(limit.Per)}, nil
}

// Capacity returns the limit.
func (w *FixedWindow) Capacity() int64 { return w.limit }

// Clone returns a copy with the same state.
func (w *FixedWindow) Clone() Algorithm { c := *w; return &c }

// AllowAt decides for cost units at now.
func (w *FixedWindow) AllowAt(now time.Time, cost int64) Decision {
	n := unixNano(now)
	if w.started && n < w.last {
		n = w.last
	}
	w.started, w.last = true, n
	index := floorDiv(n, w.window)
	count := w.count
	if index != w.index {
		count = 0
	}
	next := time.Unix(0, (index+1)*w.window)
	if cost < 1 || cost > w.limit {
		return denyNever(w.limit-count, w.resetAt(n, count, next))
	}
	if cost <= w.limit-count { // count+cost could overflow for limits near MaxInt64
		w.index, w.count = index, count+cost
		return Decision{Allowed: true, Remaining: w.limit - count - cost, ResetAt: next}
	}
	return Decision{RetryAt: next, Remaining: w.limit - count, ResetAt: next}
}

func (w *FixedWindow) resetAt(n, count int64, next time.Time) time.Time {
	if count == 0 {
		return time.Unix(0, n)
	}
	return next
}

// Instants outside [minUnix, maxUnix] are clamped, keeping window arithmetic
// inside int64 (years 1824 to 2116).
const (
	minUnix = -(1 << 62)
	maxUnix = 1 << 62
)

var minTime, maxTime = time.Unix(0, minUnix), time.Unix(0, maxUnix)

func unixNano(t time.Time) int64 {
	switch {
	case t.Before(minTime):
		return minUnix
	case t.After(maxTime):
		return maxUnix
	}
	return t.UnixNano()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
