package algorithms

import (
	"sort"
	"time"
)

// SlidingWindow admits at most limit cost units in any half-open interval of
// length window: a cost is allowed at now when the costs admitted in
// (now-window, now] plus it do not exceed limit. It is exact, not the
// weighted two-window estimate, so it keeps one entry per distinct instant
// at which something was admitted within the last window: memory grows with
// min(limit, admissions per window), 16 bytes an entry. Entries are
// dropped as they leave the window. Not safe for concurrent use.
type SlidingWindow struct {
	limit  int64
	window int64

	tl timeline
	// events is a ring of admissions, oldest first, starting at head.
	// Each keeps the running total of every cost admitted up to and
	// including it, so the total in the window is a subtraction and the
	// instant enough capacity frees up is a binary search.
	events []event
	head   int
	n      int
	before int64 // running total just before the oldest kept event
}

type event struct{ at, total int64 }

// NewSlidingWindow returns a window admitting limit.Count units in any
// window of length limit.Per: NewSlidingWindow(PerMinute(100)) admits 100
// units in any minute. It fails, matching ErrInvalidConfig, for an invalid
// rate (a count below 1, a window that is not positive or exceeds about 36
// years).
func NewSlidingWindow(limit Rate) (*SlidingWindow, error) {
	if err := limit.Validate(); err != nil {
		return nil, err
	}
	return &SlidingWindow{limit: limit.Count, window: int64(limit.Per)}, nil
}

// Capacity returns the limit.
func (w *SlidingWindow) Capacity() int64 { return w.limit }

// Clone returns a copy with the same state.
func (w *SlidingWindow) Clone() Algorithm {
	c := *w
	c.events = append([]event(nil), w.events...)
	return &c
}

// AllowAt decides for cost units at now.
func (w *SlidingWindow) AllowAt(now time.Time, cost int64) Decision {
	n := w.tl.at(now)
	w.expire(n)
	used := w.used()
	if cost < 1 || cost > w.limit {
		return denyNever(w.limit-used, w.resetAt())
	}
	if cost <= w.limit-used { // used+cost could overflow for limits near MaxInt64
		w.push(n, cost)
		return Decision{Allowed: true, Remaining: w.limit - used - cost, ResetAt: w.resetAt()}
	}
	// Denied: the oldest events must leave until used+cost-limit has gone.
	// Event k leaves the window at k.at + window.
	excess := cost - (w.limit - used)
	k := sort.Search(w.n, func(i int) bool { return w.at(i).total-w.before >= excess })
	return Decision{RetryAt: w.tl.time(w.at(k).at + w.window), Remaining: w.limit - used, ResetAt: w.resetAt()}
}

func (w *SlidingWindow) at(i int) event { return w.events[(w.head+i)%len(w.events)] }

func (w *SlidingWindow) used() int64 {
	if w.n == 0 {
		return 0
	}
	return w.at(w.n-1).total - w.before
}

// expire drops events that are no longer in (n-window, n].
func (w *SlidingWindow) expire(n int64) {
	for w.n > 0 {
		e := w.at(0)
		if e.at > n-w.window {
			return
		}
		w.before = e.total
		w.head = (w.head + 1) % len(w.events)
		w.n--
	}
}

func (w *SlidingWindow) push(n, cost int64) {
	total := w.before + cost
	if w.n > 0 {
		last := &w.events[(w.head+w.n-1)%len(w.events)]
		if last.at == n { // same instant: one entry
			last.total += cost
			return
		}
		total = last.total + cost
	}
	if w.n == len(w.events) {
		grown := make([]event, max(8, 2*len(w.events)))
		for i := 0; i < w.n; i++ {
			grown[i] = w.at(i)
		}
		w.events, w.head = grown, 0
	}
	w.events[(w.head+w.n)%len(w.events)] = event{at: n, total: total}
	w.n++
}

// resetAt is when the newest event leaves the window, and with it the last
// of the used capacity.
func (w *SlidingWindow) resetAt() time.Time {
	if w.n == 0 {
		return w.tl.time(w.tl.last)
	}
	return w.tl.time(w.at(w.n-1).at + w.window)
}
