package ownermodel

import (
	"fmt"
	"slices"
	"time"
)

// checkShares: while two lanes are both backlogged (each has an Acquire
// queued throughout), the units granted to them, W_i and W_j, keep
// Golestani's bound for self-clocked fair queueing,
// |W_i/w_i − W_j/w_j| <= L/w_i + L/w_j with L the largest cost (the
// burst), over every such interval, plus L/w for each end of it that the
// log cannot place exactly: a grant at the very instant the interval
// starts or ends may belong to either side. It returns the units it
// checked.
func (l *Log) checkShares() (int64, error) {
	if !l.Shared || len(l.Weights) < 2 {
		return 0, nil
	}
	busy := make([][]span, l.Domains)
	for d := range busy {
		busy[d] = l.backlogged(d)
	}
	var checked int64
	for i := range l.Domains {
		for j := i + 1; j < l.Domains; j++ {
			for _, s := range intersect(busy[i], busy[j]) {
				wi, wj := l.unitsIn(i, s), l.unitsIn(j, s)
				checked += wi + wj
				fi, fj := float64(l.Weights[i]), float64(l.Weights[j])
				lhs := float64(wi)/fi - float64(wj)/fj
				bound := 2 * (float64(l.Burst)/fi + float64(l.Burst)/fj)
				if lhs > bound || -lhs > bound {
					return checked, fmt.Errorf("shares: lanes %d (weight %v) and %d (weight %v) busy over (%v, %v] were granted %d and %d units: |%.2f| > %.2f",
						i, fi, j, fj, s.from, s.to, wi, wj, lhs, bound)
				}
			}
		}
	}
	return checked, nil
}

type span struct{ from, to time.Duration }

// backlogged is when lane d had an Acquire waiting, as merged spans
// [arrival, left).
func (l *Log) backlogged(d int) []span {
	var ss []span
	for _, c := range l.Calls {
		if c.Kind == KindAcquire && c.Dom == d && !c.AtOnce() {
			if left := c.Left(l.Closed); left > c.Arrived {
				ss = append(ss, span{c.Arrived, left})
			}
		}
	}
	slices.SortFunc(ss, func(a, b span) int { return int(a.from - b.from) })
	var out []span
	for _, s := range ss {
		if n := len(out); n > 0 && s.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

func intersect(a, b []span) []span {
	var out []span
	for i, j := 0, 0; i < len(a) && j < len(b); {
		from, to := max(a[i].from, b[j].from), min(a[i].to, b[j].to)
		if from < to {
			out = append(out, span{from, to})
		}
		if a[i].to < b[j].to {
			i++
		} else {
			j++
		}
	}
	return out
}

// unitsIn is what lane d was granted in (s.from, s.to], to its Acquires.
func (l *Log) unitsIn(d int, s span) int64 {
	var n int64
	for _, c := range l.Calls {
		if c.Kind == KindAcquire && c.Dom == d && c.Granted && c.At > s.from && c.At <= s.to {
			n += c.Cost
		}
	}
	return n
}
