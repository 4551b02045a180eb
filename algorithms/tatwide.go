package algorithms

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// wideTAT is tatCore's wide form, for configurations whose ticks do not fit
// one word (more than 2^30 units per period after reduction, or bursts of
// more than 2^60 ticks): the TAT in whole nanoseconds since a timeline's
// origin plus a fraction num/den, exact, for the owner only. It has no
// gate: limiters send every decision to their owner.
type wideTAT struct {
	cfg  tatConfig
	step int64 // one unit occupies step/den ns
	den  int64 // the TAT is whole ns + num/den
	tau  fixed // burst·step/den: how far TAT may run ahead of now

	tl  timeline
	tat fixed
}

func newWideTAT(cfg tatConfig) *wideTAT {
	tau, _ := mulDiv(cfg.burst, cfg.per, cfg.count) // the constructor checked the span
	return &wideTAT{cfg: cfg, step: cfg.per, den: cfg.count, tau: tau}
}

// now returns at on the timeline, shifting the TAT with the origin.
func (w *wideTAT) now(at time.Time) int64 {
	n, shift := w.tl.at(at)
	if shift > 0 {
		if w.tat.whole < shift {
			w.tat = fixed{} // before the new origin: idle
		} else {
			w.tat.whole -= shift
		}
	}
	return n
}

func (w *wideTAT) decide(at time.Time, cost, given int64) Decision {
	n := w.now(at)
	nowF := fixed{n, 0}
	base := w.tat
	if !nowF.less(base) {
		base = nowF
	}
	limit := nowF.add(w.tau, w.den) // the TAT may reach now + tau
	if cost < 1 || cost > w.cfg.burst {
		return denyNever(w.remaining(limit, base), w.tl.time(base.ceil()))
	}
	inc, _ := mulDiv(cost, w.step, w.den)
	next := base.add(inc, w.den)
	if !limit.less(next) {
		w.tat = next
		// The refund reads the receipt's end as the TAT's whole ns, a
		// little early, so it errs on the side of giving less back. Frac
		// keeps the fraction, in 2^-32 ns, only so that two admissions in
		// one ns (above a unit per ns) have receipts of their own.
		hi, lo := bits.Mul64(uint64(next.num), 1<<fracBits)
		part, _ := bits.Div64(hi, lo, uint64(w.den)) // num < den: no overflow
		return Decision{Allowed: true, Remaining: w.remaining(limit, next), ResetAt: w.tl.time(next.ceil()),
			Receipt: Receipt{At: w.tl.time(n), Cost: cost, Mark: w.tl.time(next.whole), Frac: w.cfg.version<<fracBits | int64(part), Seq: given}}
	}
	// Denied: allowed from the instant t at which tat + inc <= t + tau.
	retry := w.tat.add(inc, w.den).sub(w.tau, w.den)
	return Decision{RetryAt: w.tl.time(retry.ceil()), Remaining: w.remaining(limit, base), ResetAt: w.tl.time(base.ceil())}
}

// remaining is how many whole units fit between a TAT base (>= now) and the
// limit now + tau.
func (w *wideTAT) remaining(limit, base fixed) int64 {
	if limit.less(base) {
		return 0
	}
	q, _ := limit.sub(base, w.den).div(w.den, w.step)
	return q
}

// refund is tatCore.refund in the wide form's arithmetic: the slot's last
// cost units, g = min(cost·step/den, end - (given - r.Seq) - now, TAT - now)
// ns, with given in whole ns rounded up.
func (w *wideTAT) refund(now time.Time, r Receipt, cost, given int64, total *atomic.Int64) bool {
	if !w.tl.started {
		return false
	}
	n := w.now(now)
	dm := r.Mark.Sub(w.tl.origin)
	if dm < 0 {
		return false
	}
	floor := fixed{n, 0}
	limit := fixed{satSub(int64(dm), given-r.Seq), 0}
	if !floor.less(limit) || !floor.less(w.tat) {
		return false
	}
	g := limit.sub(floor, w.den)
	if inc, _ := mulDiv(cost, w.step, w.den); inc.less(g) {
		g = inc
	}
	if room := w.tat.sub(floor, w.den); room.less(g) {
		g = room
	}
	w.tat = w.tat.sub(g, w.den)
	total.Add(g.ceil())
	return true
}

// charge adds extra units of debt to the TAT.
func (w *wideTAT) charge(now time.Time, extra int64) {
	n := w.now(now)
	if w.tat.less(fixed{n, 0}) {
		w.tat = fixed{n, 0}
	}
	limit := n + farInstant // decades of debt: capped there
	if inc, ok := mulDiv(extra, w.step, w.den); ok && w.tat.whole < limit-inc.whole {
		w.tat = w.tat.add(inc, w.den)
	} else {
		w.tat = fixed{limit, 0}
	}
}
