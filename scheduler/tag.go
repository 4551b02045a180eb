package scheduler

import "math/bits"

// tag is a virtual time of a Fair queue: cost per unit of weight, in units
// of 2^-tagShift, as a 128-bit unsigned integer. Spans are exact to that
// unit (rounded down), so the order of two flows' tags does not drift with
// the number of grants; 128 bits hold 2^88 units of cost at weight 1
// before anything could wrap, and a Fair queue starts its tags again from
// zero whenever it empties (and rebases a class that comes near the top
// without ever emptying, see fairClass.rebase).
type tag struct{ hi, lo uint64 }

// tagShift is the precision of a tag: for weights up to MaxWeight (2^20),
// two spans c1/w1 and c2/w2 that differ at all differ by at least
// 1/(w1·w2) >= 2^-40, so their rounded values keep their order.
const tagShift = 40

// span is cost/weight as a tag: cost << tagShift over weight, rounded down.
// It requires 1 <= weight <= MaxWeight and cost >= 0.
func span(cost, weight int64) tag {
	c, w := uint64(cost), uint64(weight)
	hi, lo := c>>(64-tagShift), c<<tagShift
	if hi == 0 { // every cost below 2^24: one division
		return tag{0, lo / w}
	}
	qlo, _ := bits.Div64(hi%w, lo, w)
	return tag{hi / w, qlo}
}

func (a tag) plus(b tag) tag {
	lo, carry := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, carry)
	return tag{hi, lo}
}

// minus requires b <= a.
func (a tag) minus(b tag) tag {
	lo, borrow := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, borrow)
	return tag{hi, lo}
}

func (a tag) less(b tag) bool { return a.below(b) != 0 }

// below is 1 if a < b and 0 otherwise, without a branch: the borrow out of
// a - b. A heap's sift compares keys whose order is a coin toss, which a
// branch predicts badly.
func (a tag) below(b tag) uint64 {
	_, borrow := bits.Sub64(a.lo, b.lo, 0)
	_, borrow = bits.Sub64(a.hi, b.hi, borrow)
	return borrow
}

func maxTag(a, b tag) tag {
	if a.less(b) {
		return b
	}
	return a
}

func minTag(a, b tag) tag {
	if b.less(a) {
		return b
	}
	return a
}
