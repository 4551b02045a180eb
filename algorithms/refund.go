package algorithms

import (
	"sort"
	"time"
)

// Refunder is implemented by algorithms that can take back a cost they
// admitted and that was never used: a request that took its rate permit and
// then failed to get the rest of what it needed (permits.All refunds it).
// Every algorithm in this package implements it. Like AllowAt, RefundAt is
// for the single owner.
//
// RefundAt gives back cost units admitted at the instant granted, at the
// instant now. Call it at most once per admission, with the admission's own
// cost and instant. It never gives back more than the admission took, and
// when nothing else was admitted between the admission and the refund, the
// state afterwards decides every later request exactly as if the admission
// had not happened. When other admissions came in between, what each
// algorithm gives back is said on its method; only GCRA and the buckets can
// then be more permissive than never having admitted the refunded cost, and
// only by moving capacity that the later admissions had already waited for.
type Refunder interface {
	RefundAt(now, granted time.Time, cost int64)
}

var (
	_ Refunder = (*GCRA)(nil)
	_ Refunder = (*TokenBucket)(nil)
	_ Refunder = (*LeakyBucket)(nil)
	_ Refunder = (*SlidingWindow)(nil)
	_ Refunder = (*FixedWindow)(nil)
)

// RefundAt moves the TAT back by cost emission intervals, but never below
// now: idle time is not banked by a refund any more than by waiting. A TAT
// already at or before now has nothing to give back. The grant's instant is
// not needed. Owner only; safe beside fast-path callers (it publishes with a
// CAS and keeps the gate as it is).
func (g *GCRA) RefundAt(now, _ time.Time, cost int64) {
	o := g.origin.Load()
	if o == nil || cost < 1 || cost > g.burst {
		return // nothing was ever admitted, or not this
	}
	n := max(clampInstant(now.Sub(*o)), g.last.Load())
	inc, _ := mulDiv(cost, g.step, g.den)
	floor := fixed{n, 0}
	for {
		w := g.word.Load()
		gate := w & gateBit
		tat := fixed{w &^ gateBit, g.num}
		if !floor.less(tat) {
			return
		}
		back := tat.sub(inc, g.den)
		if back.less(floor) {
			back = floor
		}
		if g.word.CompareAndSwap(w, back.whole|gate) {
			if g.den != 1 {
				g.num = back.num
			}
			return
		}
	}
}

// RefundAt puts cost tokens back in the bucket, up to its capacity. The
// grant's instant is not needed.
func (b *TokenBucket) RefundAt(now, _ time.Time, cost int64) {
	if !b.tl.started || cost < 1 {
		return
	}
	n := b.tl.at(now)
	tokens := b.level(n)
	room := fixed{b.capacity, 0}.sub(tokens, b.den)
	if !(fixed{cost, 0}).less(room) {
		tokens = fixed{b.capacity, 0}
	} else {
		tokens = tokens.add(fixed{cost, 0}, b.den)
	}
	b.tokens, b.at = tokens, n
}

// RefundAt takes cost units out of the bucket, down to empty. The grant's
// instant is not needed.
func (b *LeakyBucket) RefundAt(now, _ time.Time, cost int64) {
	if !b.tl.started || cost < 1 {
		return
	}
	n := b.tl.at(now)
	level := b.levelAt(n)
	if !(fixed{cost, 0}).less(level) {
		level = fixed{}
	} else {
		level = level.sub(fixed{cost, 0}, b.den)
	}
	b.level, b.at = level, n
}

// RefundAt removes cost from the event recorded at the grant's instant, so
// that the window holds exactly what it would hold without the admission:
// it is exact whatever was admitted since. If that event has already left
// the window, there is nothing to give back. Should the event not hold the
// whole cost (an instant that was clamped because time went backwards), the
// rest is taken from the events before it, which leave the window sooner:
// a refund errs on the strict side, never the lenient one.
func (w *SlidingWindow) RefundAt(now, granted time.Time, cost int64) {
	if !w.tl.started || cost < 1 {
		return
	}
	w.expire(w.tl.at(now))
	g := clampInstant(granted.Sub(w.tl.origin))
	// The newest event at or before the grant's instant.
	k := sort.Search(w.n, func(i int) bool { return w.at(i).at > g }) - 1
	for left := cost; k >= 0 && left > 0; k-- {
		prev := w.before
		if k > 0 {
			prev = w.at(k - 1).total
		}
		take := min(w.at(k).total-prev, left)
		for i := k; i < w.n; i++ {
			w.events[(w.head+i)%len(w.events)].total -= take
		}
		left -= take
	}
}

// RefundAt gives cost back to the current window if the grant was counted
// in it; a grant from an earlier window has nothing to give back, since the
// count it was in no longer applies.
func (w *FixedWindow) RefundAt(now, granted time.Time, cost int64) {
	if !w.started || cost < 1 {
		return
	}
	if floorDiv(unixNano(granted), w.window) != w.index {
		return
	}
	w.count = max(w.count-cost, 0)
}
