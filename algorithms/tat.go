package algorithms

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"time"
)

// tatCore is the state machine that GCRA, TokenBucket and LeakyBucket share:
// the three admit exactly alike (a bucket's tokens are GCRA's distance
// between its theoretical arrival time, TAT, and now + tau), so one exact
// implementation serves all three and each reports it in its own words.
//
// It keeps time in ticks of 1/count ns, count being the rate's Count over
// its greatest common divisor with Per: one unit then lasts exactly per
// ticks, whatever the rate (3/s, 30/s, 1,140,000/min), and every decision is
// exact to the nanosecond. When the configuration fits (count <= 2^30 and
// burst·per <= 2^60 ticks: every rate of up to about a billion units per
// period, at any sensible burst), the whole state is one atomic word
// (gate bit, a 2-bit generation, the TAT in ticks since an origin): any
// goroutine may decide with a CAS, which is the lock-free fast path of a
// limiter. Otherwise the state is the wide form (wideTAT), exact with
// fractions, for the owner only.
//
// The origin of the one-word form moves forward (a rebase) when an instant
// lies further from it than the word can count: at least a second of ticks
// and usually years. A rebase publishes a new generation in the word and
// then the epoch that names the new origin; a fast-path caller that sees
// the two disagree changes nothing and asks the owner instead.
type tatCore struct {
	rate  Rate
	burst int64
	count int64 // ticks per ns
	per   int64 // ticks one unit occupies

	word   bool
	tau    int64 // burst·per: how far the TAT may run ahead of now, in ticks
	nMax   int64 // instants stay within nMax ticks of the origin
	nMaxNs int64 // nMax in whole ns
	ep     atomic.Pointer[tatEpoch]
	state  atomic.Uint64 // gateBit | generation<<genShift | TAT in ticks since the origin
	given  atomic.Int64  // ticks given back by refunds, ever; the owner adds after its CAS

	wide *wideTAT // the wide form, when !word

	book refundBook
}

// tatEpoch names the origin of one generation of the word.
type tatEpoch struct {
	origin time.Time
	gen    uint64
	last   atomic.Int64 // latest instant decided by the owner or TryAllowAt, ticks since origin
}

// The word's layout. TAT never reaches bit 61: instants stay below nMax and
// the TAT at most tau beyond, with nMax + tau < 2^61.
const (
	gateBit  = 1 << 63
	genShift = 61
	genMask  = 3 << genShift
	tickMask = 1<<genShift - 1

	maxTicksPerNs = 1 << 30 // so that an origin lasts at least 2^60/2^30 ns, about a second
	maxWordTau    = 1 << 60
)

// init configures c, which must be new, for rate and burst (what names the
// burst in errors: "burst" or "capacity").
func (c *tatCore) init(rate Rate, burst int64, what string) error {
	if err := rate.Validate(); err != nil {
		return err
	}
	if err := positive(what, burst); err != nil {
		return err
	}
	if err := span(rate, burst, what); err != nil {
		return err
	}
	count, per := reduce(rate)
	c.rate, c.burst, c.count, c.per = rate, burst, count, per
	hi, tau := bits.Mul64(uint64(burst), uint64(per))
	if count <= maxTicksPerNs && hi == 0 && tau <= maxWordTau {
		c.word, c.tau = true, int64(tau)
		c.nMax = tickMask - c.tau
		c.nMaxNs = c.nMax / c.count
	} else {
		c.wide = newWideTAT(count, per, burst)
	}
	return nil
}

func gen(w uint64) uint64 { return w & genMask >> genShift }

// epoch returns the current epoch, making the first one at at.
func (c *tatCore) epoch(at time.Time) *tatEpoch {
	if e := c.ep.Load(); e != nil {
		return e
	}
	first := &tatEpoch{origin: at} // only the first call allocates
	c.ep.CompareAndSwap(nil, first)
	return c.ep.Load()
}

// ticks returns at in ticks since e's origin, not before e's latest
// instant; fits is false when at lies too far beyond the origin.
func (c *tatCore) ticks(e *tatEpoch, at time.Time) (n int64, fits bool) {
	d := at.Sub(e.origin)
	if d > time.Duration(c.nMaxNs) {
		return 0, false
	}
	return max(int64(max(d, 0))*c.count, e.last.Load()), true
}

// instant returns the first instant at or after tick t.
func (c *tatCore) instant(e *tatEpoch, t int64) time.Time {
	if c.count == 1 {
		return e.origin.Add(time.Duration(t))
	}
	return e.origin.Add(time.Duration(ceilDiv(t, c.count)))
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b > 0 {
		q++
	}
	return q
}

// rebase moves the origin forward so that at fits, keeping half the range
// before at representable (decisions at scheduled instants a little in the
// past keep their meaning). Any goroutine may call it. It returns false
// when the word and the epoch disagree (another rebase is under way).
func (c *tatCore) rebase(e *tatEpoch, at time.Time) bool {
	origin := at.Add(-time.Duration(c.nMaxNs / 2))
	shift := origin.Sub(e.origin) // > 0; saturates for instants centuries apart
	next := &tatEpoch{origin: origin, gen: e.gen + 1}
	next.last.Store(shiftTicks(e.last.Load(), shift, c.count))
	for {
		w := c.state.Load()
		if gen(w) != e.gen&3 {
			return false
		}
		nw := w&gateBit | (next.gen&3)<<genShift | uint64(shiftTicks(int64(w&tickMask), shift, c.count))
		if c.state.CompareAndSwap(w, nw) {
			c.ep.Store(next)
			return true
		}
	}
}

// shiftTicks returns t ticks less shift ns, or 0 if that is before the
// origin: a TAT there is idle, like one at the origin.
func shiftTicks(t int64, shift time.Duration, count int64) int64 {
	hi, lo := bits.Mul64(uint64(shift), uint64(count))
	if hi != 0 || lo >= uint64(t) {
		return 0
	}
	return t - int64(lo)
}

// load returns a consistent epoch and word, with at in ticks of that epoch,
// rebasing as needed. With fast set it gives up (ok false) rather than wait
// for a rebase that another goroutine is publishing.
func (c *tatCore) load(at time.Time, fast bool) (e *tatEpoch, w uint64, n int64, ok bool) {
	for {
		e = c.epoch(at)
		n, fits := c.ticks(e, at)
		if !fits {
			if !c.rebase(e, at) && fast {
				return nil, 0, 0, false
			}
			continue
		}
		w = c.state.Load()
		if gen(w) == e.gen&3 {
			return e, w, n, true
		}
		if fast {
			return nil, 0, 0, false
		}
		runtime.Gosched() // a fast-path caller is between its two stores
	}
}

// decide is the one decision loop behind AllowAt, TryAllowAt and
// AllowOrCloseAt. It reads the word, decides, and publishes the new word with
// a CAS, retrying when another caller got there first. fast gives up when
// the gate is closed; closeGate closes it on a denial that waiting can cure.
//
// A fast-path call that finds the gate closed changes nothing, not even the
// latest instant seen: that instant is published only once the decision is,
// so that the owner's next decision (at a waiter's scheduled instant, which
// may be earlier) is not moved by callers it has shut out.
func (c *tatCore) decide(at time.Time, cost int64, fast, closeGate bool) (Decision, bool) {
	if !c.word {
		if fast {
			return Decision{}, false
		}
		return c.wide.decide(at, cost, &c.book)
	}
	for {
		// Read what refunds gave back before deciding: a receipt then never
		// counts a refund that came before its admission as one after it.
		given := c.given.Load()
		e, w, n, ok := c.load(at, fast)
		if !ok {
			return Decision{}, false
		}
		gate := w & gateBit
		if fast && gate != 0 {
			return Decision{}, false
		}
		tat := int64(w & tickMask)
		d, next := c.judge(e, tat, n, cost)
		nw := w
		switch {
		case d.Allowed:
			nw = w&^tickMask | uint64(next)
		case closeGate && !d.RetryAt.IsZero():
			nw = w | gateBit
		}
		if nw == w || c.state.CompareAndSwap(w, nw) {
			if d.Allowed {
				d.Receipt = Receipt{At: c.instant(e, n), Cost: cost, Mark: e.origin.Add(time.Duration(next / c.count)), Frac: next % c.count, Seq: given}
			}
			saw(&e.last, n)
			return d, true
		}
	}
}

// judge is the pure GCRA decision for TAT tat at instant n (ticks since e's
// origin); next is the TAT after an allowed cost. Overflow is impossible:
// cost <= burst, so cost·per <= tau, and n + tau < 2^61.
func (c *tatCore) judge(e *tatEpoch, tat, n, cost int64) (Decision, int64) {
	base := max(tat, n)
	limit := n + c.tau
	// The TAT may lie beyond limit when n is earlier than an instant a
	// fast-path caller decided at (TryAdmitAt does not record its instant):
	// nothing fits then, rather than a negative number of units.
	remaining := max(limit-base, 0) / c.per
	if cost < 1 || cost > c.burst {
		return denyNever(remaining, c.instant(e, base)), tat
	}
	next := base + cost*c.per
	if next <= limit {
		return Decision{Allowed: true, Remaining: (limit - next) / c.per, ResetAt: c.instant(e, next)}, next
	}
	// Denied: allowed from the instant t at which tat + cost·per <= t + tau,
	// which is after n.
	return Decision{RetryAt: c.instant(e, tat+cost*c.per-c.tau), Remaining: remaining, ResetAt: c.instant(e, base)}, tat
}

// tryAdmit is decide reduced to what a limiter's fast path needs: whether
// cost was admitted and, if not, how long after at the same cost would be
// (wait > 0). It computes neither Remaining nor ResetAt nor a receipt, and
// does not record its instant: a write per call would be a second contended
// word. An instant earlier than one this path saw is then decided at
// itself, which for GCRA is never more permissive (the TAT already lies
// beyond every instant decided), only possibly stricter.
func (c *tatCore) tryAdmit(at time.Time, cost int64) (ok bool, wait time.Duration, open bool) {
	if !c.word || cost < 1 || cost > c.burst {
		return false, 0, false
	}
	e, w, n, loaded := c.load(at, true)
	if !loaded {
		return false, 0, false
	}
	inc := cost * c.per
	for {
		if w&gateBit != 0 {
			return false, 0, false
		}
		tat := int64(w & tickMask)
		next := max(tat, n) + inc
		if next > n+c.tau {
			// time.Time.Sub saturates where int64 arithmetic would wrap,
			// for an at long before the origin.
			return false, max(c.instant(e, tat+inc-c.tau).Sub(at), 1), true
		}
		if c.state.CompareAndSwap(w, w&^tickMask|uint64(next)) {
			return true, 0, true
		}
		if w = c.state.Load(); gen(w) != e.gen&3 {
			return false, 0, false // rebased meanwhile: ask the owner
		}
	}
}

// openGate reopens the gate; the owner calls it once it has no waiters.
func (c *tatCore) openGate() {
	for {
		w := c.state.Load()
		if w&gateBit == 0 || c.state.CompareAndSwap(w, w&^gateBit) {
			return
		}
	}
}

// refund gives back what is left of the admission r records (see
// Refunder). The rule, in GCRA's terms: each admission occupies the slot
// [max(TAT, t), TAT after) of the schedule, and slots never overlap and
// never start before their own instant t. Refunding r frees its slot; the
// slots placed behind it may move into the hole by g only if each still
// starts at or after its own instant. Every slot behind r starts at or
// after r's end E less the refunds made since r (given - r.Seq), and every
// instant is at most now, so moving the TAT back by
//
//	g = min(r's length, E - (given - r.Seq) - now, TAT - now)
//
// keeps every slot valid, and with it GCRA's bound of burst + floor(rate·d)
// over any interval of length d. A slot that already lies in the past gives
// nothing back: idle time is not banked by a refund any more than by
// waiting. Safe beside fast-path callers: it publishes with a CAS, keeps the
// gate, and adds to given only after its CAS, while deciders read given
// before theirs.
func (c *tatCore) refund(now time.Time, r Receipt) bool {
	if r.Cost < 1 || r.Cost > c.burst || c.book.spentAlready(r) {
		return false
	}
	if !c.word {
		return c.wide.refund(now, r, &c.book)
	}
	if c.ep.Load() == nil || r.Frac < 0 || r.Frac >= c.count || r.Seq > c.given.Load() {
		return false // nothing was ever admitted, or the receipt is not one of ours
	}
	for {
		e, w, n, _ := c.load(now, false)
		dm := r.Mark.Sub(e.origin)
		if dm < 0 || dm > time.Duration(c.nMaxNs) {
			return false // ended before the origin: long past
		}
		end := int64(dm)*c.count + r.Frac
		g := min(r.Cost*c.per, end-(c.given.Load()-r.Seq)-n, int64(w&tickMask)-n)
		if g <= 0 {
			return false
		}
		if c.state.CompareAndSwap(w, w-uint64(g)) {
			c.given.Add(g)
			c.book.record(r, func(mark time.Time) bool { return !mark.Before(now) })
			return true
		}
	}
}

// saw records n as the latest instant seen, unless a later one already is.
func saw(last *atomic.Int64, n int64) {
	for {
		l := last.Load()
		if n <= l || last.CompareAndSwap(l, n) {
			return
		}
	}
}

// cloneInto makes c a copy of o, with its gate open.
func (c *tatCore) cloneInto(o *tatCore) {
	c.rate, c.burst, c.count, c.per = o.rate, o.burst, o.count, o.per
	c.word, c.tau, c.nMax, c.nMaxNs = o.word, o.tau, o.nMax, o.nMaxNs
	c.book = o.book.clone()
	c.given.Store(o.given.Load())
	if o.wide != nil {
		w := *o.wide
		c.wide = &w
		return
	}
	for {
		e, w := o.ep.Load(), o.state.Load()
		if e == nil {
			c.state.Store(w &^ gateBit)
			return
		}
		if gen(w) != e.gen&3 {
			runtime.Gosched()
			continue
		}
		copied := &tatEpoch{origin: e.origin, gen: e.gen}
		copied.last.Store(e.last.Load())
		c.ep.Store(copied)
		c.state.Store(w &^ gateBit)
		return
	}
}
