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
// The epoch names one generation of the word: its origin and the
// configuration it counts in. A new generation is published when the origin
// must move forward (a rebase: an instant lies further from the origin than
// the word can count, at least a second of ticks and usually years) or the
// owner changes the rate or the burst (reconfigure). The word's generation
// changes first, with a CAS, then the epoch is stored; a fast-path caller
// that sees the two disagree changes nothing and asks the owner instead.
type tatCore struct {
	ep    atomic.Pointer[tatEpoch]
	state atomic.Uint64 // gateBit | generation<<genShift | TAT in ticks since the origin
	given atomic.Int64  // ns given back by refunds, ever, rounded up; the owner adds after its CAS
	wide  *wideTAT      // the wide form, when the epoch is not word (owner only)
	book  refundBook
}

// tatConfig is what a rate and a burst make of the arithmetic.
type tatConfig struct {
	rate    Rate
	burst   int64
	count   int64 // ticks per ns
	per     int64 // ticks one unit occupies
	word    bool  // the state fits one word
	tau     int64 // burst·per: how far the TAT may run ahead of now, in ticks (word form)
	nMax    int64 // instants stay within nMax ticks of the origin (word form)
	nMaxNs  int64 // nMax in whole ns
	version int64 // reconfigurations so far: receipts of another version give nothing back
}

// tatEpoch is one generation of the word: its configuration and origin.
type tatEpoch struct {
	tatConfig
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

	fracBits = 32 // a receipt's Frac: version<<fracBits | the TAT's fraction of a ns in ticks
)

// newTATConfig checks rate and burst (what names the burst in errors:
// "burst" or "capacity") and derives the arithmetic.
func newTATConfig(rate Rate, burst int64, what string, version int64) (tatConfig, error) {
	if err := rate.Validate(); err != nil {
		return tatConfig{}, err
	}
	if err := positive(what, burst); err != nil {
		return tatConfig{}, err
	}
	if err := span(rate, burst, what); err != nil {
		return tatConfig{}, err
	}
	count, per := reduce(rate)
	cfg := tatConfig{rate: rate, burst: burst, count: count, per: per, version: version}
	hi, tau := bits.Mul64(uint64(burst), uint64(per))
	if count <= maxTicksPerNs && hi == 0 && tau <= maxWordTau {
		cfg.word, cfg.tau = true, int64(tau)
		cfg.nMax = tickMask - cfg.tau
		cfg.nMaxNs = cfg.nMax / cfg.count
	}
	return cfg, nil
}

// init configures c, which must be new. Its first epoch has the zero Time
// as origin; the first instant decided rebases it there.
func (c *tatCore) init(rate Rate, burst int64, what string) error {
	cfg, err := newTATConfig(rate, burst, what, 0)
	if err != nil {
		return err
	}
	c.ep.Store(&tatEpoch{tatConfig: cfg})
	if !cfg.word {
		c.wide = newWideTAT(cfg)
	}
	return nil
}

func gen(w uint64) uint64 { return w & genMask >> genShift }

// config returns the current configuration.
func (c *tatCore) config() *tatEpoch { return c.ep.Load() }

// ticks returns at in ticks since e's origin, not before e's latest
// instant; exact reports that n is at itself (not the latest instant, nor
// the origin for an at before it), and fits is false when at lies too far
// beyond the origin.
func (e *tatEpoch) ticks(at time.Time) (n int64, exact, fits bool) {
	d := at.Sub(e.origin)
	if d > time.Duration(e.nMaxNs) {
		return 0, false, false
	}
	n = int64(max(d, 0)) * e.count
	if last := e.last.Load(); last > n {
		return last, false, true
	}
	return n, d >= 0, true
}

// seen returns the instant a decision at at was made at: at itself when
// exact, or the instant of tick n (the latest instant seen).
func (e *tatEpoch) seen(at time.Time, n int64, exact bool) time.Time {
	if exact {
		return at
	}
	return e.instant(n)
}

// instant returns the first instant at or after tick t.
func (e *tatEpoch) instant(t int64) time.Time {
	if e.count == 1 {
		return e.origin.Add(time.Duration(t))
	}
	return e.origin.Add(time.Duration(ceilDiv(t, e.count)))
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
// when the word and the epoch disagree (another new generation is under
// way).
func (c *tatCore) rebase(e *tatEpoch, at time.Time) bool {
	origin := at.Add(-time.Duration(e.nMaxNs / 2))
	shift := origin.Sub(e.origin) // > 0; saturates for instants centuries apart
	next := &tatEpoch{tatConfig: e.tatConfig, origin: origin, gen: e.gen + 1}
	next.last.Store(shiftTicks(e.last.Load(), shift, e.count))
	for {
		w := c.state.Load()
		if gen(w) != e.gen&3 {
			return false
		}
		nw := w&gateBit | (next.gen&3)<<genShift | uint64(shiftTicks(int64(w&tickMask), shift, e.count))
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

// load returns a consistent word-form epoch and word, with at in ticks of
// that epoch, rebasing as needed. It reports ok false when the current
// epoch is the wide form, and, with fast set, rather than wait for a new
// generation that another goroutine is publishing.
func (c *tatCore) load(at time.Time, fast bool) (e *tatEpoch, w uint64, n int64, exact, ok bool) {
	for {
		e = c.ep.Load()
		if !e.word {
			return nil, 0, 0, false, false
		}
		n, exact, fits := e.ticks(at)
		if !fits {
			if !c.rebase(e, at) && fast {
				return nil, 0, 0, false, false
			}
			continue
		}
		w = c.state.Load()
		if gen(w) == e.gen&3 {
			return e, w, n, exact, true
		}
		if fast {
			return nil, 0, 0, false, false
		}
		runtime.Gosched() // a caller is between its two stores
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
func (c *tatCore) decide(d *Decision, at time.Time, cost int64, fast, closeGate bool) bool {
	for {
		// Read what refunds gave back before deciding: a receipt then never
		// counts a refund that came before its admission as one after it.
		given := c.given.Load()
		e, w, n, exact, ok := c.load(at, fast)
		if !ok {
			if fast || c.ep.Load().word {
				*d = Decision{}
				return false
			}
			*d = c.wide.decide(at, cost, given)
			return true
		}
		gate := w & gateBit
		if fast && gate != 0 {
			*d = Decision{}
			return false
		}
		tat := int64(w & tickMask)
		next := e.judge(d, tat, n, cost)
		nw := w
		switch {
		case d.Allowed:
			nw = w&^tickMask | uint64(next)
		case closeGate && !d.RetryAt.IsZero():
			nw = w | gateBit
		}
		if nw == w || c.state.CompareAndSwap(w, nw) {
			if d.Allowed {
				// The TAT after: Mark is its instant rounded up (ResetAt),
				// Frac its ticks past the last whole ns (see markTicks).
				frac := e.version << fracBits
				if e.count > 1 {
					frac |= next % e.count
				}
				d.Receipt = Receipt{At: e.seen(at, n, exact), Cost: cost, Mark: d.ResetAt, Frac: frac, Seq: given}
			}
			saw(&e.last, n)
			return true
		}
	}
}

// judge is the pure GCRA decision for TAT tat at instant n (ticks since e's
// origin), written to d without a receipt; it returns the TAT after an
// allowed cost. Overflow is impossible: cost <= burst, so cost·per <= tau,
// and n + tau < 2^61.
func (e *tatEpoch) judge(d *Decision, tat, n, cost int64) int64 {
	base := max(tat, n)
	limit := n + e.tau
	if cost >= 1 && cost <= e.burst {
		if next := base + cost*e.per; next <= limit {
			*d = Decision{Allowed: true, Remaining: (limit - next) / e.per, ResetAt: e.instant(next)}
			return next
		}
	}
	// The TAT may lie beyond limit when n is earlier than an instant a
	// fast-path caller decided at (TryAdmitAt does not record its instant),
	// or after a settled debt: nothing fits then, rather than a negative
	// number of units.
	remaining := max(limit-base, 0) / e.per
	if cost < 1 || cost > e.burst {
		*d = denyNever(remaining, e.instant(base))
		return tat
	}
	// Denied: allowed from the instant t at which tat + cost·per <= t + tau,
	// which is after n.
	*d = Decision{RetryAt: e.instant(tat + cost*e.per - e.tau), Remaining: remaining, ResetAt: e.instant(base)}
	return tat
}

// tryAdmit is decide reduced to what a limiter's fast path needs: whether
// cost was admitted and, if not, how long after at the same cost would be
// (wait > 0). It computes neither Remaining nor ResetAt nor a receipt, and
// does not record its instant: a write per call would be a second contended
// word. An instant earlier than one this path saw is then decided at
// itself, which for GCRA is never more permissive (the TAT already lies
// beyond every instant decided), only possibly stricter.
func (c *tatCore) tryAdmit(at time.Time, cost int64) (ok bool, wait time.Duration, open bool) {
	e, w, n, exact, loaded := c.load(at, true)
	if !loaded || cost < 1 || cost > e.burst {
		return false, 0, false
	}
	inc := cost * e.per
	for {
		if w&gateBit != 0 {
			return false, 0, false
		}
		tat := int64(w & tickMask)
		next := max(tat, n) + inc
		if next > n+e.tau {
			return false, e.wait(at, tat+inc-e.tau, n, exact), true
		}
		if c.state.CompareAndSwap(w, w&^tickMask|uint64(next)) {
			return true, 0, true
		}
		if w = c.state.Load(); gen(w) != e.gen&3 {
			return false, 0, false // a new generation meanwhile: ask the owner
		}
	}
}

// wait returns how long after at the tick retry (> n) comes, rounded up to
// a whole ns and at least 1. When at is n itself (exact) it is integer
// arithmetic on ticks; otherwise time.Time.Sub, which saturates where int64
// arithmetic would wrap for an at long before the origin.
func (e *tatEpoch) wait(at time.Time, retry, n int64, exact bool) time.Duration {
	if exact {
		return time.Duration(ceilDiv(retry-n, e.count))
	}
	return max(e.instant(retry).Sub(at), 1)
}

// closeGate closes the gate: from the CAS on, every lock-free decision
// finds it closed and goes to the owner.
func (c *tatCore) closeGate() {
	for {
		w := c.state.Load()
		if w&gateBit != 0 || c.state.CompareAndSwap(w, w|gateBit) {
			return
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

// refund gives back what is left of the admission r records, the last cost
// units of its slot (see Refunder). The rule, in GCRA's terms: each
// admission occupies the slot [max(TAT, t), TAT after) of the schedule, and
// slots never overlap and never start before their own instant t. Refunding
// frees the slot's last cost units; the slots placed behind it may move into
// the hole by g only if each still starts at or after its own instant. Every
// slot behind r starts at or after r's end E less the refunds made since r
// (given - r.Seq), and every instant is at most now, so moving the TAT back
// by
//
//	g = min(cost·per, E - (given - r.Seq) - now, TAT - now)
//
// keeps every slot valid, and with it GCRA's bound of burst + floor(rate·d)
// over any interval of length d. A slot that already lies in the past gives
// nothing back: idle time is not banked by a refund any more than by
// waiting. A receipt made before the rate or the burst changed gives nothing
// back either. Safe beside fast-path callers: it publishes with a CAS, keeps
// the gate, and adds to given only after its CAS, while deciders read given
// before theirs.
func (c *tatCore) refund(now time.Time, r Receipt, cost int64) bool {
	e := c.ep.Load()
	if r.Cost < 1 || cost < 1 || cost > r.Cost || r.Frac>>fracBits != e.version || r.Seq > c.given.Load() {
		return false // not an admission of this configuration
	}
	if !e.word {
		return c.wide.refund(now, r, cost, c.given.Load(), &c.given)
	}
	frac := r.Frac & (1<<fracBits - 1)
	if frac >= e.count {
		return false
	}
	for {
		e, w, n, _, ok := c.load(now, false)
		if !ok {
			return false // reconfigured to the wide form meanwhile: a receipt of another version
		}
		end, ok := e.markTicks(r.Mark, frac)
		if !ok {
			return false // ended before the origin (long past), or beyond any TAT
		}
		since := satMul(c.given.Load()-r.Seq, e.count) // ns of refunds since, in ticks, over-counted at most
		g := min(cost*e.per, satSub(end-n, since), int64(w&tickMask)-n)
		if g <= 0 {
			return false
		}
		if c.state.CompareAndSwap(w, w-uint64(g)) {
			c.given.Add(ceilDiv(g, e.count))
			return true
		}
	}
}

// markTicks returns the TAT a receipt recorded, in ticks of e: its Mark is
// that TAT rounded up to a whole ns, and frac its ticks past the whole ns
// below (0 when it was whole).
func (e *tatEpoch) markTicks(mark time.Time, frac int64) (int64, bool) {
	dm := mark.Sub(e.origin)
	if dm < 0 || dm > time.Duration(tickMask/e.count+1) { // the TAT is below 2^61 ticks
		return 0, false
	}
	end := int64(dm) * e.count
	if frac > 0 {
		end -= e.count - frac
	}
	return end, true
}

// satMul returns a·b for a, b >= 0, saturating at MaxInt64.
func satMul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(lo)
}

// charge adds extra units of debt to the TAT, as if the admission had taken
// extra units more: later admissions wait for it. It is capped where the
// word would overflow, 2^61 ticks past the origin: 2^61/count ns, centuries
// at the rates users type (count is the rate's Count after reduction: 3 at
// 30/s, 19 at 1,140,000/min), 38 minutes at 1,000,003/s, 2 s at the one-word
// form's limit of 2^30.
func (c *tatCore) charge(now time.Time, extra int64) {
	e := c.ep.Load()
	if !e.word {
		c.wide.charge(now, extra)
		return
	}
	for {
		e, w, n, _, ok := c.load(now, false)
		if !ok {
			continue // reconfigured to the wide form meanwhile
		}
		tat := max(int64(w&tickMask), n)
		next := min(satAdd(tat, satMul(extra, e.per)), tickMask)
		if c.state.CompareAndSwap(w, w&^tickMask|uint64(next)) {
			return
		}
	}
}

// settle settles the admission r records at actual units: the difference
// given back by the refund rule when actual is less, charged as debt when it
// is more. A receipt settles (or refunds) once: it reports false for one
// settled or refunded before.
func (c *tatCore) settle(now time.Time, r Receipt, actual int64) bool {
	if r.Cost < 1 || actual < 0 || c.book.spentAlready(r) {
		return false
	}
	switch {
	case actual < r.Cost:
		c.refund(now, r, r.Cost-actual)
	case actual > r.Cost:
		c.charge(now, actual-r.Cost)
	}
	c.book.record(r, func(mark time.Time) bool { return !mark.Before(now) })
	return true
}

// refundAll is RefundAt: the whole cost, once.
func (c *tatCore) refundAll(now time.Time, r Receipt) bool {
	if r.Cost < 1 || c.book.spentAlready(r) {
		return false
	}
	if !c.refund(now, r, r.Cost) {
		return false
	}
	c.book.record(r, func(mark time.Time) bool { return !mark.Before(now) })
	return true
}

// saw records n as the latest instant seen, unless a later one already is.
// A CAS loop, since TryAllowAt records from any goroutine: the latest
// instant never runs back, which the refund rule relies on (it needs every
// instant decided to be at most its own). It costs what a plain atomic
// store costs on amd64 (both are locked instructions).
func saw(last *atomic.Int64, n int64) {
	for {
		cur := last.Load()
		if n <= cur || last.CompareAndSwap(cur, n) {
			return
		}
	}
}

// cloneInto makes c a copy of o, with its gate open.
func (c *tatCore) cloneInto(o *tatCore) {
	c.book = o.book.clone()
	c.given.Store(o.given.Load())
	for {
		e, w := o.ep.Load(), o.state.Load()
		if e.word && gen(w) != e.gen&3 {
			runtime.Gosched()
			continue
		}
		copied := &tatEpoch{tatConfig: e.tatConfig, origin: e.origin, gen: e.gen}
		copied.last.Store(e.last.Load())
		c.ep.Store(copied)
		c.state.Store(w &^ gateBit)
		if o.wide != nil {
			wide := *o.wide
			c.wide = &wide
		}
		return
	}
}
