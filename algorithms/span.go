package algorithms

import (
	"math"
	"math/bits"
	"time"
)

// maxSpan bounds every duration an algorithm derives from its configuration:
// the time to drain or refill a full capacity, a window, a rate's period.
// 2^60 ns is about 36 years. Keeping spans below it leaves headroom so that
// instant + span arithmetic on int64 nanoseconds can never wrap.
const maxSpan = 1 << 60

// farInstant is how far from its origin an algorithm lets instants run,
// about 73 years (2^61 ns). An instant beyond it moves the origin forward
// (a rebase), keeping the last farInstant/2 before it representable, so
// that neither a far-past first instant nor a long life freezes an
// algorithm: spans of up to maxSpan on top of an instant still fit an int64.
const farInstant = 1 << 61

// fixed is whole + num/den for a denominator kept by its owner, 0 <= num < den.
// The algorithms keep time or tokens in it so that rates such as 3/s, whose
// emission interval is not a whole number of nanoseconds, stay exact.
type fixed struct{ whole, num int64 }

func (a fixed) add(b fixed, den int64) fixed {
	// a.num + b.num >= den, written so that it cannot overflow: GCRA's
	// denominator is the rate's Count, which may be close to MaxInt64.
	if a.num >= den-b.num {
		return fixed{a.whole + b.whole + 1, a.num - (den - b.num)}
	}
	return fixed{a.whole + b.whole, a.num + b.num}
}

func (a fixed) sub(b fixed, den int64) fixed {
	w, n := a.whole-b.whole, a.num-b.num
	if n < 0 {
		w, n = w-1, n+den
	}
	return fixed{w, n}
}

func (a fixed) less(b fixed) bool {
	return a.whole < b.whole || (a.whole == b.whole && a.num < b.num)
}

// ceil rounds up to a whole number.
func (a fixed) ceil() int64 {
	if a.num > 0 {
		return a.whole + 1
	}
	return a.whole
}

// mulDiv returns a·b/d as whole and remainder, using 128-bit intermediates.
// It requires a, b >= 0 and d > 0; ok is false when the quotient exceeds
// maxSpan. It is for spans of time; mulDivAmount is for amounts of units.
func mulDiv(a, b, d int64) (q fixed, ok bool) {
	q, ok = mulDivAmount(a, b, d)
	return q, ok && q.whole <= maxSpan
}

// mulDivAmount returns a·b/d as whole and remainder, for a, b >= 0 and
// d > 0; ok is false when the quotient does not fit an int64. Amounts of
// units (tokens refilled, a level drained) may exceed maxSpan: a capacity
// may be as large as MaxInt64 when the rate is fast enough.
func mulDivAmount(a, b, d int64) (q fixed, ok bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(d) {
		return fixed{}, false
	}
	uq, ur := bits.Div64(hi, lo, uint64(d))
	if uq > math.MaxInt64 {
		return fixed{}, false
	}
	return fixed{int64(uq), int64(ur)}, true
}

// div returns (whole + num/den)/d rounded down and up, for a >= 0 and d > 0.
// Callers pass values whose quotient their configuration bounds: spans by
// maxSpan, amounts of units by the capacity. A quotient that would not fit
// an int64 saturates at MaxInt64.
func (a fixed) div(den, d int64) (floor, ceil int64) {
	hi, lo := bits.Mul64(uint64(a.whole), uint64(den))
	var carry uint64
	lo, carry = bits.Add64(lo, uint64(a.num), 0)
	hi += carry
	if hi >= uint64(d) {
		return math.MaxInt64, math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, uint64(d))
	if q >= math.MaxInt64 {
		return math.MaxInt64, math.MaxInt64
	}
	if r != 0 {
		return int64(q), int64(q) + 1
	}
	return int64(q), int64(q)
}

// reduce divides a rate by the greatest common divisor of its count and
// period, so that fractions stay small.
func reduce(r Rate) (count, per int64) {
	a, b := r.Count, int64(r.Per)
	for b != 0 {
		a, b = b, a%b
	}
	return r.Count / a, int64(r.Per) / a
}

// timeline turns instants into nanoseconds since an origin, and never lets
// them run backwards: an instant earlier than the latest one seen reads as
// that latest one (no time has passed). Using time.Time.Sub keeps the
// monotonic clock reading when both sides have one, so wall-clock steps do
// not move a limiter.
//
// The origin is the first instant seen. When an instant lies more than
// farInstant after it (a far-past first instant, or decades of use), the
// origin moves forward and at returns by how much: the owner of the
// timeline subtracts that shift from every instant it keeps.
type timeline struct {
	origin  time.Time
	started bool
	last    int64
}

// at returns now as ns since the origin, not before the latest instant
// seen, and the shift (> 0) by which the origin moved to make it fit.
func (tl *timeline) at(now time.Time) (n, shift int64) {
	if !tl.started {
		tl.origin, tl.started = now, true
		return 0, 0
	}
	d := now.Sub(tl.origin) // saturates at about ±292 years
	if d == math.MaxInt64 {
		// Too far ahead to measure: the loop below would step 255 years
		// at a time, for as long as the gap is (from a forged instant
		// billions of years away, hundreds of millions of steps). The gap
		// is beyond anything an algorithm keeps (maxSpan), so all it
		// keeps is in the past, as after the loop: the origin farInstant/2
		// before now, and the shift saturated.
		tl.origin, tl.last = now.Add(-farInstant/2), farInstant/2
		return tl.last, math.MaxInt64
	}
	for d > farInstant {
		// Keep the latest farInstant/2 before now representable: what an
		// algorithm keeps lies at most maxSpan (< farInstant/2) in the past.
		step := d - farInstant/2
		tl.origin = tl.origin.Add(time.Duration(step))
		tl.last = max(tl.last-int64(step), 0)
		shift = satAdd(shift, int64(step))
		d = now.Sub(tl.origin)
	}
	tl.last = max(tl.last, int64(d))
	return tl.last, shift
}

// time returns the instant n nanoseconds after the origin.
func (tl *timeline) time(n int64) time.Time { return tl.origin.Add(time.Duration(n)) }

// satAdd adds two non-negative numbers, saturating at MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// satSub returns a-b for b >= 0, saturating at MinInt64/2, far below any
// instant that matters, so that instants shifted many times never wrap.
func satSub(a, b int64) int64 {
	if a < math.MinInt64/2+b {
		return math.MinInt64 / 2
	}
	return a - b
}
