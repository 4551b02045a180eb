package muldiv

import (
	"math"
	"math/bits"
)

// Floor returns ⌊a·b/c⌋ for a, b >= 0 and c > 0.
func Floor(a, b, c int64) int64 {
	q, _, ok := div(a, b, c)
	if !ok {
		return math.MaxInt64
	}
	return q
}

// Ceil returns ⌈a·b/c⌉ for a, b >= 0 and c > 0.
func Ceil(a, b, c int64) int64 {
	q, r, ok := div(a, b, c)
	if !ok || (r != 0 && q == math.MaxInt64) {
		return math.MaxInt64
	}
	if r != 0 {
		q++
	}
	return q
}

// Mul returns a·b for a, b >= 0.
func Mul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// Add returns a+b for a, b >= 0.
func Add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// div is a·b/c as quotient and remainder; ok is false when the quotient
// does not fit an int64.
func div(a, b, c int64) (q, r int64, ok bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return 0, 0, false
	}
	uq, ur := bits.Div64(hi, lo, uint64(c))
	if uq > math.MaxInt64 {
		return 0, 0, false
	}
	return int64(uq), int64(ur), true
}
