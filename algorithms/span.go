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

// maxInstant bounds instants measured from an algorithm's origin (about 73
// years). Later instants are clamped, which reads as time standing still.
const maxInstant = 1 << 61

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

// timeline turns instants into nanoseconds since the first instant an
// algorithm saw, and never lets them run backwards: an instant earlier than
// the latest one seen reads as that latest one (no time has passed). Using
// time.Time.Sub keeps the monotonic clock reading when both sides have one, so
// wall-clock steps do not move a limiter.
type timeline struct {
	origin  time.Time
	started bool
	last    int64
}

func (tl *timeline) at(now time.Time) int64 {
	if !tl.started {
		tl.origin, tl.started = now, true
		return 0
	}
	n := clampInstant(now.Sub(tl.origin))
	if n < tl.last {
		n = tl.last
	}
	tl.last = n
	return n
}

// time returns the instant n nanoseconds after the origin.
func (tl *timeline) time(n int64) time.Time { return tl.origin.Add(time.Duration(n)) }

func clampInstant(d time.Duration) int64 {
	switch {
	case d < 0:
		return 0
	case d > maxInstant:
		return maxInstant
	}
	return int64(d)
}
