package sim

import (
	"math/bits"
	"slices"
)

// exactWaits is how many non-zero waits a distribution keeps exactly
// (8 MB) before it folds them into its histogram: runs of up to a million
// waits have exact percentiles; longer ones, within 0.1%.
const exactWaits = 1 << 20

// subBits sets the histogram's precision: 2^subBits buckets per power of
// two, so a bucket's width is at most 1/1024 of its values (values below
// 2^(subBits+1) ns are exact).
const subBits = 10

// dist is the distribution of the waits of admitted requests in constant
// memory: zero waits counted, the others kept exactly while there are few,
// then counted in a log-linear histogram (about 55,000 buckets at most,
// allocated as far as the longest wait needs).
type dist struct {
	zeros int64
	exact []int64 // while hist is nil, in no order
	hist  []int64 // counts by bucket(wait)
	n     int64   // non-zero waits in hist
}

func (d *dist) add(w int64) {
	switch {
	case w <= 0:
		d.zeros++
	case d.hist == nil && len(d.exact) < exactWaits:
		d.exact = append(d.exact, w)
	default:
		if d.hist == nil {
			for _, x := range d.exact {
				d.count(x)
			}
			d.exact = nil
		}
		d.count(w)
	}
}

func (d *dist) count(w int64) {
	b := bucket(uint64(w))
	if b >= len(d.hist) {
		d.hist = slices.Grow(d.hist, b+1-len(d.hist))[:b+1]
	}
	d.hist[b]++
	d.n++
}

// total is the number of waits, zeros included.
func (d *dist) total() int64 { return d.zeros + int64(len(d.exact)) + d.n }

// bucket numbers values so that values below 2^(subBits+1) have one each
// and each later power of two has 2^subBits.
func bucket(v uint64) int {
	const sub = 1 << subBits
	if v < 2*sub {
		return int(v)
	}
	e := bits.Len64(v) - subBits - 1
	return int(uint64(e+1)*sub + v>>e - sub)
}

// top is the largest value in bucket b.
func top(b int) int64 {
	const sub = 1 << subBits
	if b < 2*sub {
		return int64(b)
	}
	e := b/sub - 1
	m := uint64(b%sub + sub)
	return int64((m+1)<<e - 1)
}

// rank returns the k-th smallest wait (1-based, k <= total): exact while
// the waits are, else the largest wait of its bucket (at most 0.1% above
// it), capped at the longest wait, longest. It reorders exact.
func (d *dist) rank(k int64, longest int64) int64 {
	if k <= d.zeros {
		return 0
	}
	k -= d.zeros
	if d.hist == nil {
		return selectKth(d.exact, int(k-1))
	}
	for b, c := range d.hist {
		if k <= c {
			return min(top(b), longest)
		}
		k -= c
	}
	return longest
}

// each calls f with every non-zero wait or, once folded, every bucket's
// largest value and count.
func (d *dist) each(f func(w, n int64)) {
	for _, w := range d.exact {
		f(w, 1)
	}
	for b, c := range d.hist {
		if c > 0 {
			f(top(b), c)
		}
	}
}
