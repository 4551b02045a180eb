package algorithms

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"time"
)

// FixedWindow admits at most limit cost units in each window aligned to the
// Unix epoch ([k·window, (k+1)·window) for whole k), so that processes
// sharing a limit agree on the boundaries. A burst at the end of one window
// and another at the start of the next can pass 2·limit units in a short
// time: pick SlidingWindow or GCRA when that matters.
//
// Its state is the current window and the cost admitted in it. For limits
// below 2^41 that is one atomic word, and FixedWindow implements Gated:
// TryAllowAt and TryAdmitAt are safe from any goroutine, beside the single
// owner's AllowAt, AllowOrCloseAt, OpenGate, RefundAt, SettleAt and
// SetRateAt.
//
// Unlike the other algorithms it reads the wall-clock part of its instants
// (alignment to the epoch is the point), in any year; instants before the
// latest one it saw still count as that one.
type FixedWindow struct {
	ep      atomic.Pointer[fwEpoch]
	state   atomic.Uint64 // gateBit | generation<<genShift | window<<cb | count
	refunds atomic.Int64  // refunds made, ever; the owner adds after its CAS

	// The wide form, for limits of 2^41 and more: owner only, no gate.
	wideIdx, wideCount int64

	book refundBook
}

// fwConfig is the limit and the word's layout for it.
type fwConfig struct {
	limit   int64
	window  int64
	cb      uint  // bits of the count in the word
	word    bool  // the state is one word
	idxMax  int64 // window numbers since the epoch's base stay below it
	dMax    int64 // idxMax·window: instants since the base stay below it
	version int64 // SetRateAt calls so far: receipts of another version give nothing back
}

// fwEpoch is one generation of the word: its configuration, and the base
// that window numbers count from.
type fwEpoch struct {
	fwConfig
	base    time.Time // the start of window 0, aligned to the epoch
	started bool      // base was set by an instant (the first epoch has none)
	gen     uint64
	last    atomic.Int64 // latest instant decided (not by TryAdmitAt), ns since base
}

// NewFixedWindow returns a fixed window admitting limit.Count units in each
// epoch-aligned window of length limit.Per: NewFixedWindow(PerMinute(100))
// admits 100 units in each calendar minute. It fails, matching
// ErrInvalidConfig, for an invalid rate (a count below 1, a window that is
// not positive or exceeds about 36 years).
func NewFixedWindow(limit Rate) (*FixedWindow, error) {
	cfg, err := newFWConfig(limit, 0)
	if err != nil {
		return nil, err
	}
	w := &FixedWindow{}
	w.ep.Store(&fwEpoch{fwConfig: cfg})
	return w, nil
}

func newFWConfig(limit Rate, version int64) (fwConfig, error) {
	if err := limit.Validate(); err != nil {
		return fwConfig{}, err
	}
	cfg := fwConfig{limit: limit.Count, window: int64(limit.Per), version: version}
	cfg.cb = uint(bits.Len64(uint64(limit.Count)))
	if ib := genShift - int(cfg.cb); ib >= 20 {
		cfg.word = true
		cfg.idxMax = min(1<<ib-1, (1<<62)/cfg.window)
	} else {
		cfg.idxMax = (1 << 62) / cfg.window
	}
	cfg.dMax = cfg.idxMax * cfg.window // at most 2^62
	return cfg, nil
}

// Capacity returns the limit.
func (w *FixedWindow) Capacity() int64 { return w.ep.Load().limit }

// Rate returns the limit per window, as NewFixedWindow took it.
func (w *FixedWindow) Rate() Rate {
	e := w.ep.Load()
	return Rate{Count: e.limit, Per: time.Duration(e.window)}
}

// LockFree reports whether the state is one atomic word (limits below
// 2^41), so that TryAllowAt and TryAdmitAt decide from any goroutine.
func (w *FixedWindow) LockFree() bool { return w.ep.Load().word }

// Clone returns a copy with the same state; the copy's gate is open.
func (w *FixedWindow) Clone() Algorithm {
	c := &FixedWindow{wideIdx: w.wideIdx, wideCount: w.wideCount, book: w.book.clone()}
	c.refunds.Store(w.refunds.Load())
	for {
		e, s := w.ep.Load(), w.state.Load()
		if e.word && gen(s) != e.gen&3 {
			runtime.Gosched()
			continue
		}
		copied := &fwEpoch{fwConfig: e.fwConfig, base: e.base, started: e.started, gen: e.gen}
		copied.last.Store(e.last.Load())
		c.ep.Store(copied)
		c.state.Store(s &^ gateBit)
		return c
	}
}

// AllowAt decides for cost units at now. Owner only.
func (w *FixedWindow) AllowAt(now time.Time, cost int64) Decision {
	var d Decision
	w.decide(&d, now, cost, false, false)
	return d
}

// TryAllowAt decides for cost units at now while the gate is open. Safe
// from any goroutine; the gate is always closed when !LockFree().
func (w *FixedWindow) TryAllowAt(now time.Time, cost int64) (Decision, bool) {
	var d Decision
	ok := w.decide(&d, now, cost, true, false)
	return d, ok
}

// AllowOrCloseAt decides like AllowAt and closes the gate on a denial that
// waiting can cure. Owner only.
func (w *FixedWindow) AllowOrCloseAt(now time.Time, cost int64) Decision {
	var d Decision
	w.decide(&d, now, cost, false, true)
	return d
}

// CloseGate closes the gate. Owner only.
func (w *FixedWindow) CloseGate() {
	for {
		s := w.state.Load()
		if s&gateBit != 0 || w.state.CompareAndSwap(s, s|gateBit) {
			return
		}
	}
}

// OpenGate reopens the gate. Owner only.
func (w *FixedWindow) OpenGate() {
	for {
		s := w.state.Load()
		if s&gateBit == 0 || w.state.CompareAndSwap(s, s&^gateBit) {
			return
		}
	}
}

// TryAdmitAt is the lean form of TryAllowAt for a limiter's fast path:
// whether cost was admitted and, if not, how long after now it would be. It
// does not record now as the latest instant seen: an instant earlier than
// one this path saw falls in the same window or an earlier one, which counts
// as the stored window: never more permissive.
func (w *FixedWindow) TryAdmitAt(now time.Time, cost int64) (ok bool, wait time.Duration, open bool) {
	for {
		e, s, d, _, loaded := w.load(now, true)
		if !loaded || !e.word || s&gateBit != 0 || cost < 1 || cost > e.limit {
			return false, 0, false
		}
		idx, count := w.unpack(e, s)
		cur, count := e.current(idx, count, d)
		if cost > e.limit-count {
			return false, max(time.Duration((cur+1)*e.window-d), 1), true
		}
		if w.state.CompareAndSwap(s, e.pack(s, cur, count+cost)) {
			return true, 0, true
		}
	}
}

func (w *FixedWindow) unpack(e *fwEpoch, s uint64) (idx, count int64) {
	if !e.word {
		return w.wideIdx, w.wideCount
	}
	return int64(s & tickMask >> e.cb), int64(s & (1<<e.cb - 1))
}

func (e *fwEpoch) pack(s uint64, idx, count int64) uint64 {
	return s&(gateBit|genMask) | uint64(idx)<<e.cb | uint64(count)
}

// store publishes a new window and count (and gate), with a CAS in the word
// form; the wide form is the owner's alone.
func (w *FixedWindow) store(e *fwEpoch, s uint64, idx, count int64, gate bool) bool {
	if !e.word {
		w.wideIdx, w.wideCount = idx, count
		return true
	}
	n := e.pack(s, idx, count)
	if gate {
		n |= gateBit
	}
	return n == s || w.state.CompareAndSwap(s, n)
}

// seen returns the instant a decision at at was made at: at itself when
// exact, or the latest instant seen, d.
func (e *fwEpoch) seen(at time.Time, d int64, exact bool) time.Time {
	if exact {
		return at
	}
	return e.base.Add(time.Duration(d))
}

// current returns the window instant d (ns since the base) falls in, and
// the count that applies there: the stored count in the stored window (or
// an earlier instant), none in a later window.
func (e *fwEpoch) current(idx, count, d int64) (int64, int64) {
	if d < (idx+1)*e.window {
		return idx, count
	}
	return d / e.window, 0
}

// load returns a consistent epoch and word, and at in ns since the base
// (not before the latest instant recorded; exact when it is at itself),
// starting a new generation when
// at lies beyond the windows the word can number (or is the first instant).
// With fast set it gives up (ok false) rather than wait for a generation
// another goroutine is publishing.
func (w *FixedWindow) load(at time.Time, fast bool) (e *fwEpoch, s uint64, d int64, exact, ok bool) {
	for {
		e = w.ep.Load()
		s = w.state.Load()
		if e.word && gen(s) != e.gen&3 {
			if fast {
				return nil, 0, 0, false, false
			}
			runtime.Gosched()
			continue
		}
		d = int64(at.Sub(e.base))
		exact = true
		if last := e.last.Load(); last > d {
			d, exact = last, false
		}
		if e.started && d < e.dMax {
			return e, s, d, exact, true
		}
		// A window the word cannot number (or at is centuries on, or the
		// first instant): the stored window is long over, so the new
		// generation starts empty at at's window.
		next := &fwEpoch{fwConfig: e.fwConfig, base: alignDown(at, e.window), started: true, gen: e.gen + 1}
		if !e.word {
			w.ep.Store(next)
			w.wideIdx, w.wideCount = 0, 0
			continue
		}
		if w.state.CompareAndSwap(s, s&gateBit|(next.gen&3)<<genShift) {
			w.ep.Store(next)
		} else if fast {
			return nil, 0, 0, false, false
		}
	}
}

func (w *FixedWindow) decide(dec *Decision, at time.Time, cost int64, fast, closeGate bool) bool {
	for {
		refunds := w.refunds.Load() // before deciding, as tatCore.decide reads given
		e, s, d, exact, ok := w.load(at, fast)
		if !ok || fast && (!e.word || s&gateBit != 0) {
			*dec = Decision{}
			return false
		}
		idx, count := w.unpack(e, s)
		cur, count := e.current(idx, count, d)
		next := e.base.Add(time.Duration((cur + 1) * e.window))
		stored := true
		switch {
		case cost < 1 || cost > e.limit:
			reset := next
			if count == 0 {
				reset = e.base.Add(time.Duration(d))
			}
			*dec = denyNever(max(e.limit-count, 0), reset)
		case cost <= e.limit-count: // count+cost could overflow for limits near MaxInt64
			// The receipt names its window by the window's end (Mark).
			*dec = Decision{Allowed: true, Remaining: e.limit - count - cost, ResetAt: next, NextAt: next,
				Receipt: Receipt{At: e.seen(at, d, exact), Cost: cost, Mark: next,
					Frac: e.version<<42 | (count+cost)&(1<<42-1), Seq: refunds}}
			stored = w.store(e, s, cur, count+cost, s&gateBit != 0)
		default:
			*dec = Decision{RetryAt: next, Remaining: max(e.limit-count, 0), ResetAt: next, NextAt: next}
			if closeGate {
				stored = w.store(e, s, idx, count, true)
			}
		}
		if stored {
			saw(&e.last, d)
			return true
		}
	}
}

// RefundAt gives the cost of the admission r records back to the current
// window, if that is the window it was counted in: a grant from an earlier
// window has nothing to give back, since the count it was in no longer
// applies. Owner only; safe beside fast-path callers.
func (w *FixedWindow) RefundAt(now time.Time, r Receipt) bool {
	_, changed := w.adjust(now, r, -r.Cost)
	return changed
}

// SettleAt settles the admission r records at actual units, once: the
// difference comes back to its window when actual is less, and is counted
// in it when more (while that window lasts; it may fill the window).
func (w *FixedWindow) SettleAt(now time.Time, r Receipt, actual int64) bool {
	if actual < 0 {
		return false
	}
	accepted, _ := w.adjust(now, r, actual-r.Cost)
	return accepted
}

// SetRateAt changes the limit and the window at now. What the current
// window counted stays counted: it carries into the window of the new length
// that holds now. Fast-path callers see the change atomically. Receipts made
// before give nothing back afterwards. Owner only.
func (w *FixedWindow) SetRateAt(now time.Time, limit Rate) error {
	for {
		e, s, d, _, _ := w.load(now, false)
		cfg, err := newFWConfig(limit, e.version+1)
		if err != nil {
			return err
		}
		idx, count := w.unpack(e, s)
		_, count = e.current(idx, count, d)
		count = min(count, cfg.limit)
		next := &fwEpoch{fwConfig: cfg, base: alignDown(now, cfg.window), started: true, gen: e.gen + 1}
		if cfg.word {
			nw := s&gateBit | (next.gen&3)<<genShift | uint64(count)
			if e.word && !w.state.CompareAndSwap(s, nw) {
				continue
			}
			if !e.word {
				w.state.Store(nw | gateBit) // the owner reopens it once it has no waiters
			}
		} else {
			if e.word && !w.state.CompareAndSwap(s, s|gateBit|(next.gen&3)<<genShift) {
				continue
			}
			w.wideIdx, w.wideCount = 0, count
		}
		w.ep.Store(next)
		return nil
	}
}

// SetBurstAt returns an error matching ErrInvalidConfig: a window has a
// limit, which SetRateAt changes, and no burst.
func (w *FixedWindow) SetBurstAt(time.Time, int64) error {
	return invalid("a fixed window has no burst: SetRateAt changes its limit")
}

// adjust adds delta to the count of the window the admission r records was
// counted in, if that is the current one (a refund when negative, down to
// nothing), once per receipt. accepted is false for a receipt settled or
// refunded before (or not one of this window's); changed, whether the count
// changed.
func (w *FixedWindow) adjust(now time.Time, r Receipt, delta int64) (accepted, changed bool) {
	if r.Cost < 1 || r.Seq > w.refunds.Load() || w.book.spentAlready(r) {
		return false, false
	}
	for {
		e, s, d, _, ok := w.load(now, false)
		if !ok || r.Cost > e.limit {
			return false, false
		}
		idx, count := w.unpack(e, s)
		cur, count := e.current(idx, count, d)
		end := e.base.Add(time.Duration((cur + 1) * e.window))
		live := func(mark time.Time) bool { return !mark.Before(end) }
		next := min(max(count+delta, 0), e.limit) // a debt fills the window at most
		if cur != idx || !r.Mark.Equal(end) || r.Frac>>42 != e.version || next == count {
			w.book.record(r, live) // its window is over, or nothing to change
			return true, false
		}
		if w.store(e, s, idx, next, s&gateBit != 0) {
			if delta < 0 {
				w.refunds.Add(1)
			}
			w.book.record(r, live)
			return true, true
		}
	}
}

// alignDown returns the start of the epoch-aligned window of length window
// that holds t, in any year: t's Unix nanoseconds, which do not fit an int64
// outside 1678-2262, are taken modulo window in 128 bits.
func alignDown(t time.Time, window int64) time.Time {
	sec, nsec := t.Unix(), uint64(t.Nanosecond())
	var r uint64
	if sec >= 0 {
		hi, lo := bits.Mul64(uint64(sec), 1e9)
		lo, c := bits.Add64(lo, nsec, 0)
		r = bits.Rem64(hi+c, lo, uint64(window))
	} else {
		// t = sec·1e9 + nsec < 0, whose magnitude is (-sec)·1e9 - nsec;
		// uint64(-sec) is right for sec = MinInt64 too.
		hi, lo := bits.Mul64(uint64(-sec), 1e9)
		lo, b := bits.Sub64(lo, nsec, 0)
		if m := bits.Rem64(hi-b, lo, uint64(window)); m != 0 {
			r = uint64(window) - m
		}
	}
	return t.Add(-time.Duration(r))
}
