package scenario

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// MaxExcess returns the largest number of grants, over every closed window
// of the timeline, beyond the conformance bound b + floor(r·d) of a limiter
// admitting count units per per with bursts of b, where d is the window's
// length. grants are instants (ns on any common timeline) in ascending
// order. A result of 0 or less means that the bound was never exceeded; it
// is 1-b for a single grant.
//
// The windows that matter start and end at grants, so for grants i <= j the
// excess is (j-i+1) - b - floor(count·(t_j-t_i)/per). With
// v_k = k·per - count·t_k that is 1 - b + ceil((v_j-v_i)/per), which is
// largest when v_i is the smallest v before j: one pass, exact in integers
// as long as len(grants)·per and count·t stay below 2^63.
func MaxExcess(grants []int64, count int64, per time.Duration, b int64) int64 {
	e, _, _ := MaxExcessWindow(grants, count, per, b)
	return e
}

// MaxExcessWindow is MaxExcess and the indexes i <= j of the first grants
// that start and end a window with that excess.
func MaxExcessWindow(grants []int64, count int64, per time.Duration, b int64) (excess int64, i, j int) {
	if len(grants) == 0 {
		return 0, 0, 0
	}
	p := int64(per)
	best := int64(0)
	minV, minK := int64(math.MaxInt64), 0
	for k, t := range grants {
		v := int64(k)*p - count*t
		if v < minV {
			minV, minK = v, k
		}
		if v-minV > best {
			best, i, j = v-minV, minK, k
		}
	}
	return 1 - b + ceilDiv(best, p), i, j
}

// ceilDiv is ceil(a/b) for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// FIFOViolations counts the callers that were overtaken: caller i arrived
// strictly before some caller j (arrival[i] < arrival[j]) and was granted
// strictly after it (grant[i] > grant[j]). arrival and grant hold one
// sequence number per call, from shared atomic counters stamped just before
// the call and just after it returned; arrival values must be distinct.
func FIFOViolations(arrival, grant []int64) int {
	idx := make([]int, len(arrival))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(arrival[a], arrival[b]) })
	n := 0
	minLater := int64(math.MaxInt64) // smallest grant among later arrivals
	for k := len(idx) - 1; k >= 0; k-- {
		g := grant[idx[k]]
		if minLater < g {
			n++
		}
		minLater = min(minLater, g)
	}
	return n
}

// FIFOViolationsApart counts the callers overtaken by a caller that
// arrived more than apart after them: caller i arrived at arrivedAt[i] and
// some caller j with arrivedAt[j] > arrivedAt[i] + apart was granted
// strictly before it (grant[j] < grant[i], grant sequence numbers). A caller
// stamps its arrival just before it calls the limiter, and the thread
// running it can be descheduled in between; requiring the overtaker to have
// arrived clearly later keeps that noise out.
func FIFOViolationsApart(arrivedAt, grant []int64, apart time.Duration) int {
	idx := make([]int, len(arrivedAt))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(arrivedAt[a], arrivedAt[b]) })
	// suffix[k] is the smallest grant among idx[k:].
	suffix := make([]int64, len(idx)+1)
	suffix[len(idx)] = math.MaxInt64
	for k := len(idx) - 1; k >= 0; k-- {
		suffix[k] = min(suffix[k+1], grant[idx[k]])
	}
	n := 0
	for k, i := range idx {
		limit := arrivedAt[i] + int64(apart)
		// first position whose arrival is strictly after limit
		j, _ := slices.BinarySearchFunc(idx[k:], limit+1, func(x int, t int64) int { return cmp.Compare(arrivedAt[x], t) })
		if suffix[k+j] < grant[i] {
			n++
		}
	}
	return n
}
