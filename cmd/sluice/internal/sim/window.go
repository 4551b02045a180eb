package sim

import (
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
)

// stamp is an amount of units admitted at an instant (ns on the timeline).
type stamp struct{ at, cost int64 }

// window keeps the units admitted in the last length ns, oldest first, in a
// ring whose size is a power of two (a mask, not a division, per step).
// Instants must not decrease.
type window struct {
	length  int64
	ring    []stamp
	head, n int
	sum     int64
}

// expire drops what is no longer in (at-length, at].
func (w *window) expire(at int64) {
	for w.n > 0 && w.ring[w.head].at <= at-w.length {
		w.sum -= w.ring[w.head].cost
		w.head = (w.head + 1) & (len(w.ring) - 1)
		w.n--
	}
}

// add records cost at at, which must not be before the latest instant added.
func (w *window) add(at, cost int64) {
	w.sum += cost
	if w.n > 0 {
		if last := &w.ring[(w.head+w.n-1)&(len(w.ring)-1)]; last.at == at {
			last.cost += cost // one entry per instant, as SlidingWindow keeps them
			return
		}
	}
	if w.n == len(w.ring) {
		grown := make([]stamp, max(64, 2*len(w.ring)))
		for i := range w.n {
			grown[i] = w.ring[(w.head+i)&(len(w.ring)-1)]
		}
		w.ring, w.head = grown, 0
	}
	w.ring[(w.head+w.n)&(len(w.ring)-1)] = stamp{at, cost}
	w.n++
}

// oldest is the instant of the oldest entry; the window must not be empty.
func (w *window) oldest() int64 { return w.ring[w.head].at }

// judge is an upstream's verdict on each of our admissions, in order:
// whether it would have admitted it. What it refuses takes nothing.
type judge interface{ admit(at, cost int64) bool }

// newJudge returns the upstream's own algorithm, except for a sliding
// window, whose rule (admit when the units admitted in (at-window, at] plus
// cost are at most the limit) is kept here in a ring: the same verdicts as
// algorithms.SlidingWindow (a test holds them equal) at a fraction of its
// cost, since every admission of every limit is judged.
func newJudge(up spec.Limit, c clock) (judge, error) {
	alg, err := up.New()
	if err != nil {
		return nil, err
	}
	if up.Kind == spec.Sliding {
		return &slidingJudge{limit: up.Rate.Count, w: window{length: int64(up.Rate.Per)}}, nil
	}
	return algorithmJudge{alg, c}, nil
}

type algorithmJudge struct {
	alg   algorithms.Algorithm
	clock clock
}

func (j algorithmJudge) admit(at, cost int64) bool {
	ok, _ := decideOn(j.alg, j.clock, at, cost)
	return ok
}

type slidingJudge struct {
	limit int64
	w     window
}

func (j *slidingJudge) admit(at, cost int64) bool {
	j.w.expire(at)
	if cost > j.limit-j.w.sum {
		return false
	}
	j.w.add(at, cost)
	return true
}
