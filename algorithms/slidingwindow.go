package algorithms

import (
	"sort"
	"time"
)

// SlidingWindow admits at most limit cost units in any half-open interval of
// length window: a cost is allowed at now when the costs admitted in
// (now-window, now] plus it do not exceed limit. It is exact, not the
// weighted two-window estimate, so it keeps one entry per distinct instant
// at which something was admitted within the last window: memory follows
// min(limit, admissions per window), 16 bytes an entry, and shrinks again
// as entries leave the window. Not safe for concurrent use.
type SlidingWindow struct {
	limit  int64
	window int64

	tl timeline
	// events is a ring of admissions, oldest first, starting at head.
	// Each keeps the running total of every cost admitted up to and
	// including it, so the total in the window is a subtraction and the
	// instant enough capacity frees up is a binary search.
	events  []event
	head    int
	n       int
	before  int64 // running total just before the oldest kept event
	seq     int64 // admissions made, ever: a receipt's identity
	version int64 // SetRateAt calls so far: receipts of another version give nothing back

	book refundBook
}

type event struct{ at, total int64 }

// minRing is the smallest ring kept once entries leave.
const minRing = 8

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

// Rate returns the limit per window, as NewSlidingWindow took it.
func (w *SlidingWindow) Rate() Rate { return Rate{Count: w.limit, Per: time.Duration(w.window)} }

// Clone returns a copy with the same state. It copies the live entries
// only, however large the ring grew.
func (w *SlidingWindow) Clone() Algorithm {
	c := *w
	c.events = make([]event, max(w.n, minRing))
	for i := range w.n {
		c.events[i] = w.at(i)
	}
	c.head = 0
	c.book = w.book.clone()
	return &c
}

// AllowAt decides for cost units at now.
func (w *SlidingWindow) AllowAt(now time.Time, cost int64) Decision {
	n := w.now(now)
	used := w.used()
	if cost < 1 || cost > w.limit {
		return denyNever(w.limit-used, w.resetAt())
	}
	if cost <= w.limit-used { // used+cost could overflow for limits near MaxInt64
		w.push(n, cost)
		w.seq++
		at := w.tl.time(n)
		return Decision{Allowed: true, Remaining: w.limit - used - cost, ResetAt: at.Add(time.Duration(w.window)), NextAt: w.nextAt(),
			Receipt: Receipt{At: at, Cost: cost, Mark: at, Frac: w.version, Seq: w.seq}}
	}
	// Denied: the oldest events must leave until used+cost-limit has gone.
	// Event k leaves the window at k.at + window.
	excess := cost - (w.limit - used)
	k := sort.Search(w.n, func(i int) bool { return w.at(i).total-w.before >= excess })
	return Decision{RetryAt: w.tl.time(w.at(k).at + w.window), Remaining: w.limit - used, ResetAt: w.resetAt(), NextAt: w.nextAt()}
}

// nextAt is when the oldest event leaves the window, and with it the
// first of the used capacity; the zero Time with nothing in the window.
func (w *SlidingWindow) nextAt() time.Time {
	if w.n == 0 {
		return time.Time{}
	}
	return w.tl.time(w.at(0).at + w.window)
}

// now reads now on the timeline, moving the kept instants with the origin
// when it moves, and drops the events that have left the window.
func (w *SlidingWindow) now(now time.Time) int64 {
	n, shift := w.tl.at(now)
	if shift > 0 {
		for i := range w.n {
			e := &w.events[(w.head+i)%len(w.events)]
			e.at = satSub(e.at, shift)
		}
	}
	w.expire(n)
	return n
}

func (w *SlidingWindow) at(i int) event { return w.events[(w.head+i)%len(w.events)] }

func (w *SlidingWindow) used() int64 {
	if w.n == 0 {
		return 0
	}
	return w.at(w.n-1).total - w.before
}

// expire drops events that are no longer in (n-window, n], and shrinks the
// ring as they go, so that memory follows the live entries.
func (w *SlidingWindow) expire(n int64) {
	for w.n > 0 {
		e := w.at(0)
		if e.at > n-w.window {
			break
		}
		w.before = e.total
		w.head = (w.head + 1) % len(w.events)
		w.n--
	}
	w.fit()
}

// fit reallocates the ring to half its size when at most a quarter of it is
// in use, and drops it when empty.
func (w *SlidingWindow) fit() {
	if w.n == 0 && len(w.events) > minRing {
		w.events, w.head = nil, 0
		return
	}
	if len(w.events) <= minRing || w.n > len(w.events)/4 {
		return
	}
	w.resize(len(w.events) / 2)
}

func (w *SlidingWindow) resize(size int) {
	ring := make([]event, size)
	for i := range w.n {
		ring[i] = w.at(i)
	}
	w.events, w.head = ring, 0
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
		w.resize(max(minRing, 2*len(w.events)))
	}
	w.events[(w.head+w.n)%len(w.events)] = event{at: n, total: total}
	w.n++
}

// resetAt is when the newest event leaves the window, and with it the last
// of the used capacity; with nothing in the window, the latest instant.
func (w *SlidingWindow) resetAt() time.Time {
	if w.n == 0 {
		return w.tl.time(w.tl.last)
	}
	return w.tl.time(w.at(w.n-1).at + w.window)
}

// RefundAt removes the cost of the admission r records from the event that
// counted it, so that the window holds exactly what it would hold without
// the admission: that is exact whatever was admitted since, and never lets
// any window hold more than the limit. An event left empty is dropped. If
// the event has already left the window, there is nothing to give back.
// The cost of a refund is the number of events admitted after r's.
func (w *SlidingWindow) RefundAt(now time.Time, r Receipt) bool {
	_, changed := w.adjust(now, r, -r.Cost)
	return changed
}

// SettleAt settles the admission r records at actual units, once: the
// difference comes out of its event when actual is less, and is added to it
// when it is more, so that the window counts what was used while the event
// is in it.
func (w *SlidingWindow) SettleAt(now time.Time, r Receipt, actual int64) bool {
	if actual < 0 {
		return false
	}
	accepted, _ := w.adjust(now, r, actual-r.Cost)
	return accepted
}

// SetRateAt changes the limit and the window at now; the admissions in the
// window stay counted. Receipts made before give nothing back afterwards.
func (w *SlidingWindow) SetRateAt(now time.Time, limit Rate) error {
	if err := limit.Validate(); err != nil {
		return err
	}
	w.now(now)
	w.limit, w.window = limit.Count, int64(limit.Per)
	w.version++
	w.expire(w.tl.last)
	return nil
}

// SetBurstAt returns an error matching ErrInvalidConfig: a window has a
// limit, which SetRateAt changes, and no burst.
func (w *SlidingWindow) SetBurstAt(time.Time, int64) error {
	return invalid("a sliding window has no burst: SetRateAt changes its limit")
}

// adjust adds delta to the event of the admission r records (a refund when
// negative, down to nothing), once per receipt. accepted is false for a
// receipt settled or refunded before (or not one of this window's);
// changed, whether the window changed.
func (w *SlidingWindow) adjust(now time.Time, r Receipt, delta int64) (accepted, changed bool) {
	if !w.tl.started || r.Cost < 1 || r.Seq < 1 || r.Seq > w.seq || w.book.spentAlready(r) {
		return false, false
	}
	w.now(now)
	expiry, latest := time.Duration(w.window), w.tl.time(w.tl.last)
	live := func(mark time.Time) bool { return mark.Add(expiry).After(latest) }
	defer w.book.record(r, live)
	d := r.Mark.Sub(w.tl.origin)
	if d < 0 || delta == 0 || delta < 0 && r.Frac != w.version {
		return true, false // long gone, nothing to change, or counted under another limit
	}
	at := int64(d)
	k := sort.Search(w.n, func(i int) bool { return w.at(i).at >= at })
	if k == w.n || w.at(k).at != at {
		return true, false // left the window
	}
	prev := w.before
	if k > 0 {
		prev = w.at(k - 1).total
	}
	change := max(delta, prev-w.at(k).total) // never below nothing
	for i := k; i < w.n; i++ {
		w.events[(w.head+i)%len(w.events)].total += change
	}
	if w.at(k).total == prev {
		w.remove(k)
	}
	return true, change != 0
}

// remove drops event k, moving the later ones up.
func (w *SlidingWindow) remove(k int) {
	for i := k; i < w.n-1; i++ {
		w.events[(w.head+i)%len(w.events)] = w.at(i + 1)
	}
	w.n--
	w.fit()
}
