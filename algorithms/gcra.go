package algorithms

import (
	"sync/atomic"
	"time"
)

// GCRA is the Generic Cell Rate Algorithm in its virtual-scheduling form: it
// keeps a theoretical arrival time (TAT), the instant at which the stream
// would be idle again if it had been paced exactly at the rate. A cost c
// moves the TAT c emission intervals (Per/Count) into the future, and is
// allowed when the new TAT is at most burst intervals after now. Idle time
// is never banked: a TAT in the past is first brought up to now.
//
// With burst 1 it paces strictly, one emission interval apart; with burst b
// it admits b units at once from idle and at most b + floor(rate·d) units
// over any closed interval of length d.
//
// The state is one word of nanoseconds, kept with the fraction of a
// nanosecond that rates such as 3/s need: decisions are exact to the
// nanosecond. When the emission interval is a whole number of nanoseconds
// (10/s, 1000/s, 100/minute, ...), the state is a single atomic word and
// GCRA implements Gated: TryAllowAt is safe from any goroutine. AllowAt,
// AllowOrCloseAt and OpenGate are for the single owner.
type GCRA struct {
	rate  Rate
	burst int64
	den   int64 // TAT is whole ns + num/den
	step  int64 // one unit occupies step/den ns
	tau   fixed // burst·step/den: how far TAT may run ahead of now

	origin atomic.Pointer[time.Time] // first instant seen; times are ns since it
	last   atomic.Int64              // latest instant seen, ns since origin
	word   atomic.Int64              // TAT whole ns since origin, | gateBit
	num    int64                     // TAT's fraction; non-zero only when den > 1 (owner only)
}

// gateBit marks a closed gate in GCRA.word. TAT never reaches it: instants
// stop at maxInstant and TAT at most maxSpan beyond.
const gateBit = 1 << 62

// NewGCRA returns a GCRA that admits rate with bursts of up to burst units.
// It fails, matching ErrInvalidConfig, for an invalid rate, a burst below 1,
// or a burst whose span burst·Per/Count exceeds about 36 years.
func NewGCRA(rate Rate, burst int64) (*GCRA, error) {
	if err := rate.Validate(); err != nil {
		return nil, err
	}
	if err := positive("burst", burst); err != nil {
		return nil, err
	}
	if err := span(rate, burst, "burst"); err != nil {
		return nil, err
	}
	count, per := reduce(rate)
	tau, _ := mulDiv(burst, per, count)
	return &GCRA{rate: rate, burst: burst, den: count, step: per, tau: tau}, nil
}

// Capacity returns the burst: the largest cost admissible at once.
func (g *GCRA) Capacity() int64 { return g.burst }

// Rate returns the configured rate.
func (g *GCRA) Rate() Rate { return g.rate }

// Clone returns a copy of the algorithm with the same state; the copy's gate
// is open.
func (g *GCRA) Clone() Algorithm {
	c := &GCRA{rate: g.rate, burst: g.burst, den: g.den, step: g.step, tau: g.tau, num: g.num}
	c.origin.Store(g.origin.Load())
	c.last.Store(g.last.Load())
	c.word.Store(g.word.Load() &^ gateBit)
	return c
}

// AllowAt decides for cost units at now. Owner only.
func (g *GCRA) AllowAt(now time.Time, cost int64) Decision {
	d, _ := g.decide(now, cost, false, false)
	return d
}

// LockFree reports whether the emission interval is a whole number of
// nanoseconds, so that the state is one atomic word and TryAllowAt and
// TryAdmitAt can decide from any goroutine. Otherwise they always report the
// gate closed.
func (g *GCRA) LockFree() bool { return g.den == 1 }

// TryAllowAt decides for cost units at now while the gate is open. It is safe
// for concurrent use with itself and with the owner's calls when the
// emission interval is a whole number of nanoseconds; otherwise it always
// reports the gate closed.
func (g *GCRA) TryAllowAt(now time.Time, cost int64) (Decision, bool) {
	if g.den != 1 {
		return Decision{}, false
	}
	return g.decide(now, cost, true, false)
}

// TryAdmitAt is the lean form of TryAllowAt for a limiter's fast path: it
// reports only whether cost was admitted and, if not, how long after now the
// same cost would be (wait > 0). It computes neither Remaining nor ResetAt.
func (g *GCRA) TryAdmitAt(now time.Time, cost int64) (ok bool, wait time.Duration, open bool) {
	if g.den != 1 || cost < 1 || cost > g.burst {
		return false, 0, false
	}
	origin := g.start(now)
	// The fast path reads the latest instant but does not record its own:
	// a write per call would be a second contended word. An instant earlier
	// than one this path saw is then decided at itself, which for GCRA is
	// never more permissive (the TAT already lies beyond every instant
	// decided), only possibly stricter.
	n := max(clampInstant(now.Sub(origin)), g.last.Load())
	inc := cost * g.step
	for {
		w := g.word.Load()
		if w&gateBit != 0 {
			return false, 0, false
		}
		next := max(w, n) + inc
		if next > n+g.tau.whole {
			// Allowed from the instant w + inc - tau, which is after n and
			// so after now, unless now lies beyond the instants GCRA can
			// tell apart (maxInstant after the origin). time.Time.Sub
			// saturates where int64 arithmetic on now.Sub(origin) would
			// wrap, for a now long before the origin.
			return false, max(at(origin, w+inc-g.tau.whole).Sub(now), 1), true
		}
		if g.word.CompareAndSwap(w, next) {
			return true, 0, true
		}
	}
}

// AllowOrCloseAt decides for cost units at now and, when it denies a cost
// that could be allowed later, closes the gate in the same step. Owner only.
func (g *GCRA) AllowOrCloseAt(now time.Time, cost int64) Decision {
	d, _ := g.decide(now, cost, false, true)
	return d
}

// OpenGate reopens the gate. Owner only.
func (g *GCRA) OpenGate() {
	for {
		w := g.word.Load()
		if w&gateBit == 0 || g.word.CompareAndSwap(w, w&^gateBit) {
			return
		}
	}
}

// decide is the one decision loop behind every entry point. It reads the
// state word, decides, and publishes the new word with a CAS, retrying when a
// fast-path caller got there first. fast gives up when the gate is closed;
// closeGate closes it on a denial.
//
// A fast-path call that finds the gate closed changes nothing, not even the
// latest instant seen: that instant is published only once the decision is,
// so that the owner's next decision (at a waiter's scheduled instant, which
// may be earlier) is not moved by callers it has shut out.
func (g *GCRA) decide(at time.Time, cost int64, fast, closeGate bool) (Decision, bool) {
	// start writes only on the very first call, when the gate is open: only
	// a denial closes it.
	origin := g.start(at)
	n := clampInstant(at.Sub(origin))
	for {
		now := max(n, g.last.Load())
		w := g.word.Load()
		gate := w & gateBit
		if fast && gate != 0 {
			return Decision{}, false
		}
		tat := fixed{w &^ gateBit, g.num}
		d, next := g.judge(origin, tat, now, cost)
		nw := w
		switch {
		case d.Allowed:
			nw = next.whole | gate
		case closeGate && !d.RetryAt.IsZero():
			nw = w | gateBit
		}
		if nw == w || g.word.CompareAndSwap(w, nw) {
			if d.Allowed && g.den != 1 {
				g.num = next.num
			}
			g.saw(now)
			return d, true
		}
	}
}

// judge is the pure GCRA decision for the TAT tat at instant now (both ns
// since origin); next is the TAT after an allowed cost.
func (g *GCRA) judge(origin time.Time, tat fixed, now, cost int64) (Decision, fixed) {
	if g.den == 1 {
		return g.judgeWhole(origin, tat.whole, now, cost)
	}
	nowF := fixed{now, 0}
	base := tat
	if !nowF.less(tat) {
		base = nowF
	}
	limit := nowF.add(g.tau, g.den) // the TAT may reach now + tau
	if cost < 1 || cost > g.burst {
		return denyNever(g.remaining(limit, base), at(origin, base.ceil())), tat
	}
	inc, _ := mulDiv(cost, g.step, g.den)
	next := base.add(inc, g.den)
	if !limit.less(next) {
		return Decision{Allowed: true, Remaining: g.remaining(limit, next), ResetAt: at(origin, next.ceil())}, next
	}
	// Denied: allowed from the instant t at which tat + inc <= t + tau.
	retry := tat.add(inc, g.den).sub(g.tau, g.den)
	return Decision{RetryAt: at(origin, retry.ceil()), Remaining: g.remaining(limit, base), ResetAt: at(origin, base.ceil())}, tat
}

// judgeWhole is judge for a whole-nanosecond emission interval (step ns per
// unit): plain int64 arithmetic, no fractions or divisions on the allowed
// path but Remaining's. Overflow is impossible: cost <= burst and
// burst·step <= maxSpan.
func (g *GCRA) judgeWhole(origin time.Time, tat, now, cost int64) (Decision, fixed) {
	base := max(tat, now)
	limit := now + g.tau.whole
	// The TAT may lie beyond limit when now is earlier than an instant a
	// fast-path caller decided at (TryAdmitAt does not record its instant,
	// and concurrent callers read the latest instant before others publish
	// theirs): nothing fits then, rather than a negative number of units.
	remaining := max(limit-base, 0) / g.step
	if cost < 1 || cost > g.burst {
		return denyNever(remaining, at(origin, base)), fixed{tat, 0}
	}
	next := base + cost*g.step
	if next <= limit {
		return Decision{Allowed: true, Remaining: (limit - next) / g.step, ResetAt: at(origin, next)}, fixed{next, 0}
	}
	retry := tat + cost*g.step - g.tau.whole
	return Decision{RetryAt: at(origin, retry), Remaining: remaining, ResetAt: at(origin, base)}, fixed{tat, 0}
}

func at(origin time.Time, n int64) time.Time { return origin.Add(time.Duration(n)) }

// remaining is how many whole units fit between a TAT base (>= now) and the
// limit now + tau.
func (g *GCRA) remaining(limit, base fixed) int64 {
	if limit.less(base) {
		return 0
	}
	n, _ := limit.sub(base, g.den).div(g.den, g.step)
	return n
}

// start returns the origin, setting it to at on the first call.
func (g *GCRA) start(at time.Time) time.Time {
	if o := g.origin.Load(); o != nil {
		return *o
	}
	first := at // only the first call pays for this allocation
	g.origin.CompareAndSwap(nil, &first)
	return *g.origin.Load()
}

// saw records n (ns since origin) as the latest instant seen, unless a later
// one already is.
func (g *GCRA) saw(n int64) {
	for {
		last := g.last.Load()
		if n <= last || g.last.CompareAndSwap(last, n) {
			return
		}
	}
}
