package algorithms

import "time"

// wideTAT is tatCore's wide form, for configurations whose ticks do not fit
// one word (more than 2^30 units per period after reduction, or bursts of
// more than 2^60 ticks): the TAT in whole nanoseconds since a timeline's
// origin plus a fraction num/den, exact, for the owner only. It has no
// gate: limiters send every decision to their owner.
type wideTAT struct {
	den   int64 // the TAT is whole ns + num/den
	step  int64 // one unit occupies step/den ns
	burst int64
	tau   fixed // burst·step/den: how far TAT may run ahead of now

	tl    timeline
	tat   fixed
	given fixed // ns given back by refunds, ever
}

func newWideTAT(count, per, burst int64) *wideTAT {
	tau, _ := mulDiv(burst, per, count) // the constructor checked the span
	return &wideTAT{den: count, step: per, burst: burst, tau: tau}
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

func (w *wideTAT) decide(at time.Time, cost int64, book *refundBook) (Decision, bool) {
	n := w.now(at)
	nowF := fixed{n, 0}
	base := w.tat
	if !nowF.less(base) {
		base = nowF
	}
	limit := nowF.add(w.tau, w.den) // the TAT may reach now + tau
	if cost < 1 || cost > w.burst {
		return denyNever(w.remaining(limit, base), w.tl.time(base.ceil())), true
	}
	inc, _ := mulDiv(cost, w.step, w.den)
	next := base.add(inc, w.den)
	if !limit.less(next) {
		w.tat = next
		return Decision{Allowed: true, Remaining: w.remaining(limit, next), ResetAt: w.tl.time(next.ceil()),
			Receipt: Receipt{At: w.tl.time(n), Cost: cost, Mark: w.tl.time(next.whole), Frac: next.num, Seq: w.given.whole}}, true
	}
	// Denied: allowed from the instant t at which tat + inc <= t + tau.
	retry := w.tat.add(inc, w.den).sub(w.tau, w.den)
	return Decision{RetryAt: w.tl.time(retry.ceil()), Remaining: w.remaining(limit, base), ResetAt: w.tl.time(base.ceil())}, true
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

// refund is tatCore.refund in the wide form's arithmetic. A receipt's Seq
// holds the whole ns of given when it was made, rounded down, so the refunds
// since it are over-counted by less than a nanosecond: never under.
func (w *wideTAT) refund(now time.Time, r Receipt, book *refundBook) bool {
	if !w.tl.started || r.Frac < 0 || r.Frac >= w.den || r.Seq > w.given.whole {
		return false
	}
	n := w.now(now)
	dm := r.Mark.Sub(w.tl.origin)
	if dm < 0 {
		return false
	}
	end := fixed{int64(dm), r.Frac}
	since := w.given.sub(fixed{r.Seq, 0}, w.den)
	floor := fixed{n, 0}
	inc, _ := mulDiv(r.Cost, w.step, w.den)
	// g = min(inc, end - since - now, tat - now)
	limit := end.sub(since, w.den)
	if !floor.less(limit) || !floor.less(w.tat) {
		return false
	}
	g := limit.sub(floor, w.den)
	if inc.less(g) {
		g = inc
	}
	if room := w.tat.sub(floor, w.den); room.less(g) {
		g = room
	}
	w.tat = w.tat.sub(g, w.den)
	w.given = w.given.add(g, w.den)
	book.record(r, func(mark time.Time) bool { return !mark.Before(now) })
	return true
}
