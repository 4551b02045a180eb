package sim

import (
	"slices"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/muldiv"
)

// percentiles sets P50 and P99 over the admitted requests and the callers
// still waiting at the horizon (Stranded), nearest rank: the smallest wait
// that at least that share of them did not exceed. The stranded rank above
// every granted wait (theirs is at least the run's length, and may be
// forever); a percentile that falls among them is reported as such.
func (res *Result) percentiles() {
	n := res.dist.total() + res.Stranded
	res.P50, res.P99 = 0, 0
	res.P50Stranded, res.P99Stranded = false, false
	if n == 0 {
		return
	}
	granted := res.dist.total()
	// The 99th first: selecting it leaves the 50th among the waits before.
	for _, q := range []struct {
		pct      int64
		at       *time.Duration
		stranded *bool
	}{{99, &res.P99, &res.P99Stranded}, {50, &res.P50, &res.P50Stranded}} {
		rank := (q.pct*n + 99) / 100 // ⌈q·n/100⌉, 1-based
		if rank > granted {
			*q.stranded = true
			continue
		}
		*q.at = time.Duration(res.dist.rank(rank, int64(res.Max)))
	}
}

// selectKth returns the k-th smallest (0-based) of a, reordering a:
// quickselect with a median-of-three pivot and a three-way partition, so
// that sorted input (a queue's waits grow) and runs of equal waits stay
// linear. Sorting millions of waits would cost more than the run.
func selectKth(a []int64, k int) int64 {
	lo, hi := 0, len(a) // a[lo:hi] holds the answer
	for hi-lo > 16 {
		p := median(a[lo], a[lo+(hi-lo)/2], a[hi-1])
		// a[lo:lt] < p, a[lt:i] == p, a[gt:hi] > p
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch {
			case a[i] < p:
				a[lt], a[i] = a[i], a[lt]
				lt++
				i++
			case a[i] > p:
				gt--
				a[i], a[gt] = a[gt], a[i]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return p
		}
	}
	slices.Sort(a[lo:hi])
	return a[k]
}

func median(a, b, c int64) int64 {
	if a > b {
		a, b = b, a
	}
	if b > c {
		b = c
	}
	return max(a, b)
}

// WaitCDF returns the distribution of the admitted requests' waits in
// points steps from 0 to the longest: at[i] is a wait, below[i] the
// fraction of admitted requests that waited at most that long. It is a
// histogram, linear in the waits kept, and exact at its steps while the
// waits are (within 0.1% after).
func (res *Result) WaitCDF(points int) (at []time.Duration, below []float64) {
	n := res.dist.total()
	if n == 0 || points < 1 {
		return nil, nil
	}
	top := int64(res.Max)
	counts := make([]int64, points+1) // counts[i]: waits in (step·(i-1), step·i]
	counts[0] = res.dist.zeros
	res.dist.each(func(w, c int64) {
		counts[muldiv.Ceil(min(w, top), int64(points), top)] += c // 1 <= it <= points
	})
	var sum int64
	for i, c := range counts {
		sum += c
		at = append(at, time.Duration(muldiv.Floor(top, int64(i), int64(points))))
		below = append(below, float64(sum)/float64(n))
	}
	return at, below
}
