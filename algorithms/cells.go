package algorithms

import (
	"sync/atomic"
	"time"
)

// Cells is the one-word form of GCRA, TokenBucket and LeakyBucket for many
// keys of one configuration: each key's whole state is a Cell, one atomic
// word of 8 bytes, and the rate, the burst and the origin the words count
// from are kept once, here, for all of them. A limiter per key (package
// keyed) spends a Cell on a key where a GCRA costs 48 bytes and its
// 128-byte epoch.
//
// A cell decides as a GCRA of the same rate and burst with the same history:
// the same Allowed, RetryAt, Remaining and ResetAt to the nanosecond, with
// the same gate (TryAllowAt and TryAdmitAt decide only while it is open;
// AllowOrCloseAt, and from any goroutine TryAllowOrCloseAt and
// TryAdmitOrCloseAt, close it on a denial that waiting can cure; OpenGate
// reopens it). Two things differ:
//
//   - A cell keeps no latest instant of its own (a GCRA keeps one, 8 bytes
//     more): an instant earlier than one a cell decided a cost at is decided
//     at itself, where a GCRA counts it as the latest instant it saw. That
//     is never more permissive than deciding at the later instant: every
//     decision for a cost from 1 to the burst leaves the TAT beyond its
//     instant, so an earlier instant finds the same TAT and a smaller
//     allowance. No decision names a RetryAt or ResetAt before its own
//     instant, and the bound burst + floor(rate·d) holds over the instants
//     decided at, in whatever order they come.
//   - Decisions carry no Receipt: cells do not refund or settle.
//
// The word is a GCRA's one-word form (gate bit, 2-bit generation, the
// theoretical arrival time in ticks of 1/count ns since the origin). The
// origin moves forward when an instant lies further from it than the word
// can count (a rebase: a generation counts at least two seconds, decades at
// most rates), and each rebase starts a new generation. A cell last written
// in one of the three generations before the current one is converted,
// exactly, when it is next touched; one older than that would be misread.
// So the owner of the cells, which alone starts generations (Advance,
// AllowAt, AllowOrCloseAt and Retire may; the methods for any goroutine give
// up instead and report the gate closed, as they do for an instant before
// the origin, which only a caller descheduled for half a generation
// holds), calls Refresh on every cell it
// keeps whenever Generation changes, before three more generations can
// start. Package keyed does, on its shard's owner goroutine.
//
// The zero Cell is full, at capacity, in every generation. A Cell must not
// be copied once in use.
//
// TryAllowAt, TryAdmitAt, TryAllowOrCloseAt, TryAdmitOrCloseAt, Gated,
// WaitBehindAt, Retired, Rate, Capacity and Generation are safe for
// concurrent use from any goroutine, and so is Adopt on a cell nobody
// else uses yet; the other methods are for the single owner of the cells,
// and are safe beside those.
type Cells struct {
	cfg tatConfig
	ep  atomic.Pointer[cellEpoch]
}

// Cell is one key's state in a Cells. The zero Cell is full.
type Cell struct{ w atomic.Uint64 }

// cellEpoch is one generation: the configuration and origin every cell of
// the generation counts in, and the origins before it, to convert the
// cells written then. Its last stays 0: cells keep no latest instant.
type cellEpoch struct {
	tatEpoch
	before [3]time.Time // origins of generations gen-1, gen-2 and gen-3
}

// retiredWord marks a cell taken out of use (Retire). No cell in use holds
// it: its instants stay below nMax ticks (see ticks), so its TAT stays
// below nMax + tau = tickMask, and this word has every TAT bit set.
const retiredWord = ^uint64(0)

// NewCells returns the configuration for cells that admit rate with bursts
// of up to burst units (a TokenBucket's or LeakyBucket's capacity). It
// fails, matching ErrInvalidConfig, where NewGCRA does, and for a
// configuration without the one-word form (GCRA.LockFree false: more than
// 2^30 units per period after dividing Count and Per by their common
// divisor, or a burst of more than 2^60 ticks).
func NewCells(rate Rate, burst int64) (*Cells, error) {
	cfg, err := newTATConfig(rate, burst, "burst", 0)
	if err != nil {
		return nil, err
	}
	if !cfg.word {
		return nil, invalid("rate %v with burst %d has no one-word form: more than 2^30 units per period, or a burst too long to count in ticks", rate, burst)
	}
	c := &Cells{cfg: cfg}
	c.ep.Store(&cellEpoch{tatEpoch: tatEpoch{tatConfig: cfg}})
	return c, nil
}

// Rate returns the configured rate.
func (c *Cells) Rate() Rate { return c.cfg.rate }

// Capacity returns the burst: the largest cost a cell admits at once.
func (c *Cells) Capacity() int64 { return c.cfg.burst }

// Generation returns the current generation, which each rebase increments.
func (c *Cells) Generation() uint64 { return c.ep.Load().gen }

// AllowAt decides for cost units of cell at now, as GCRA.AllowAt. It
// returns the zero Decision for a retired cell. Owner only.
func (c *Cells) AllowAt(cell *Cell, now time.Time, cost int64) Decision {
	d, _ := c.decide(cell, now, cost, false, false)
	return d
}

// AllowOrCloseAt decides like AllowAt and, when it denies a cost that could
// be allowed later, closes cell's gate in the same step. Owner only.
func (c *Cells) AllowOrCloseAt(cell *Cell, now time.Time, cost int64) Decision {
	d, _ := c.decide(cell, now, cost, false, true)
	return d
}

// TryAllowAt decides for cost units of cell at now while its gate is open;
// open is false, and nothing changed, when the gate is closed, the cell is
// retired, or now lies beyond what the current generation counts (the
// owner's next Advance or AllowAt moves the origin) or before its origin
// (an instant read long before the call: the owner decides it). Safe from
// any goroutine.
func (c *Cells) TryAllowAt(cell *Cell, now time.Time, cost int64) (d Decision, open bool) {
	return c.decide(cell, now, cost, true, false)
}

// TryAdmitAt is TryAllowAt reduced to what a limiter's fast path needs, as
// GCRA.TryAdmitAt: whether cost was admitted and, if not, the wait until it
// would be (> 0). It reports open false also for a cost that can never be
// admitted. Safe from any goroutine.
func (c *Cells) TryAdmitAt(cell *Cell, now time.Time, cost int64) (ok bool, wait time.Duration, open bool) {
	return c.tryAdmit(cell, now, cost, false)
}

// TryAllowOrCloseAt decides like TryAllowAt and, when it denies a cost
// that could be allowed later, closes cell's gate in the same atomic step:
// the caller then owes the cell's owner a request that reopens it (the
// owner's OpenGate), and every other caller finds the gate closed until
// then. Safe from any goroutine.
func (c *Cells) TryAllowOrCloseAt(cell *Cell, now time.Time, cost int64) (d Decision, open bool) {
	return c.decide(cell, now, cost, true, true)
}

// TryAdmitOrCloseAt is TryAdmitAt that closes cell's gate on a denial in
// the same atomic step, as TryAllowOrCloseAt does. Safe from any
// goroutine.
func (c *Cells) TryAdmitOrCloseAt(cell *Cell, now time.Time, cost int64) (ok bool, wait time.Duration, open bool) {
	return c.tryAdmit(cell, now, cost, true)
}

// Gated reports whether cell's gate is closed (a retired cell is not
// gated). Safe from any goroutine.
func (c *Cells) Gated(cell *Cell) bool {
	w := cell.w.Load()
	return w != retiredWord && w&gateBit != 0
}

// WaitBehindAt returns, for a cell whose gate is closed for a request
// denied earlier, a lower bound on how long cost units wait at now behind
// that request: the time until cost units and one more fit (> 0), ignoring
// the gate; nothing is admitted on a gated cell but by its owner, and the
// request the gate was closed for is at least one unit. gated is false,
// and wait 0, when the gate is open, the cell is retired, or now lies
// beyond what the current generation counts or before its origin. Safe
// from any goroutine.
func (c *Cells) WaitBehindAt(cell *Cell, now time.Time, cost int64) (wait time.Duration, gated bool) {
	e, w, n, exact, ok := c.load(cell, now, true)
	if !ok || w&gateBit == 0 {
		return 0, false
	}
	cost = min(max(cost, 0), e.burst)
	retry := int64(w&tickMask) + (cost+1)*e.per - e.tau
	if retry <= n {
		return 1, true
	}
	return e.wait(now, retry, n, exact), true
}

// tryAdmit is TryAdmitAt; with closeGate, a denial closes the gate in the
// same CAS.
//
// A lost CAS starts again from the epoch, not from the word alone: a
// caller descheduled while four generations began would find the word's
// two generation bits equal to its stale epoch's and decide a TAT counted
// from the newer origin with an instant counted from the older, that is,
// at an instant seconds after its own, where the cell has refilled.
//
// The first CAS can still meet the same word across four generations: a
// cell left idle is refreshed to TAT 0 in each, so after four it can hold
// the very word the caller loaded. The caller is then granted at its own
// instant, which the cell admitted when it was loaded, and the TAT it
// writes, counted from the newer origin, is later than its own by the
// four origins' distance (each rebase moves the origin by at least a
// quarter of a generation's span, nMax): later decisions wait for it, so
// nothing decided after the CAS is over-admitted. What an admission made
// between the load and the CAS took is not seen by it; the bound over the
// instants decided at could then exceed burst by the caller's cost, but
// only for a caller descheduled between its load and its CAS for three
// rebases or more (three quarters of nMax at least: seconds at the fastest
// rates of the one-word form, decades at most). Its permit is returned
// then, more than nMax/2 after any unit taken meanwhile (that unit's TAT
// lay before the fourth origin), so over the instants permits are
// returned at the bound holds wherever the burst is at most rate·nMax/2:
// every configuration but one whose burst spans about a generation.
func (c *Cells) tryAdmit(cell *Cell, now time.Time, cost int64, closeGate bool) (ok bool, wait time.Duration, open bool) {
	for {
		e, w, n, exact, loaded := c.load(cell, now, true)
		if !loaded || cost < 1 || cost > e.burst {
			return false, 0, false
		}
		if w&gateBit != 0 {
			return false, 0, false
		}
		inc := cost * e.per
		tat := int64(w & tickMask)
		next := max(tat, n) + inc
		if next > n+e.tau {
			if !closeGate || cell.w.CompareAndSwap(w, w|gateBit) {
				return false, e.wait(now, tat+inc-e.tau, n, exact), true
			}
		} else if cell.w.CompareAndSwap(w, w&^tickMask|uint64(next)) {
			return true, 0, true
		}
	}
}

// OpenGate reopens cell's gate. Owner only.
func (c *Cells) OpenGate(cell *Cell) {
	for {
		w := cell.w.Load()
		if w == retiredWord || w&gateBit == 0 || cell.w.CompareAndSwap(w, w&^gateBit) {
			return
		}
	}
}

// Advance moves the origin forward, starting a new generation, once now is
// three quarters of the way to the last instant the current generation
// counts, so that the instants callers read a little after now still fit.
// It never moves the origin back. Owner only; after a new generation, the
// owner refreshes its cells (see Cells).
func (c *Cells) Advance(now time.Time) {
	if e := c.ep.Load(); now.Sub(e.origin) > time.Duration(e.nMaxNs/4*3) {
		c.rebase(e, now)
	}
}

// Refresh converts cell to the current generation, if it was last written
// in an earlier one. Owner only; safe beside fast-path callers.
func (c *Cells) Refresh(cell *Cell) {
	for {
		e, w := c.read(cell)
		if w == retiredWord || gen(w) == e.gen&3 || cell.w.CompareAndSwap(w, e.convert(w)) {
			return
		}
	}
}

// Retire takes cell out of use if it is full at now and its gate is open,
// in one atomic step with the decisions of every other goroutine: after it
// reports true, TryAllowAt and TryAdmitAt report the gate closed and
// Retired reports true, so a caller that finds the cell retired knows that
// no admission was or will be made on it, and looks for its key's state
// elsewhere. It reports false, changing nothing, for a cell that is not
// full, is gated, or is retired already. Owner only.
func (c *Cells) Retire(cell *Cell, now time.Time) bool {
	for {
		_, w, n, _, ok := c.load(cell, now, false)
		if !ok || w&gateBit != 0 || int64(w&tickMask) > n {
			return false
		}
		if cell.w.CompareAndSwap(w, retiredWord) {
			return true
		}
	}
}

// Move gives dst the state of src and takes src out of use, in one atomic
// step with the decisions of every other goroutine on src: an admission
// made on src before it travels with the state, and a decision on src
// after it finds src retired (TryAllowAt and TryAdmitAt report the gate
// closed), so a caller that finds it retired looks
// for its key's state elsewhere. It is how a cell changes place: into a
// larger table, or into a record of its own. dst must be a cell of the
// same Cells that nobody decides on yet. A src retired already moves
// nothing and leaves dst as it was; Move reports whether a state moved.
// Owner only.
func (c *Cells) Move(dst, src *Cell) bool {
	w := src.w.Swap(retiredWord)
	if w == retiredWord {
		return false
	}
	dst.w.Store(w)
	return true
}

// Clone returns a GCRA with cell's state and configuration, its gate open,
// for predictions (a TokenBucket and a LeakyBucket of the same
// configuration admit exactly alike). A retired cell clones as a full one.
// Owner only.
func (c *Cells) Clone(cell *Cell) Algorithm {
	e, w := c.read(cell)
	switch {
	case w == retiredWord:
		w = 0
	case gen(w) != e.gen&3:
		w = e.convert(w)
	}
	return c.gcra(e, w&tickMask)
}

// Detach takes cell out of use whatever its state, and returns a GCRA that
// carries on from it: the same configuration, the same TAT and the same
// gate, so that it admits exactly what the cell would have (no capacity
// lost or gained), and can then be given a configuration of its own
// (Tunable). It is one atomic step with the decisions of every other
// goroutine, as Retire is: an admission made before it is in the GCRA, and
// a decision after it finds the cell retired (TryAllowAt and TryAdmitAt
// report the gate closed, Retired reports true), so a caller that finds
// the cell retired looks for its key's state elsewhere. A cell retired
// already detaches as a full one. The cell stays retired: Revive is for
// cells that Retire took out of use. Owner only.
func (c *Cells) Detach(cell *Cell) *GCRA {
	for {
		e, w := c.read(cell)
		switch {
		case w == retiredWord:
			return c.gcra(e, 0)
		case gen(w) != e.gen&3:
			cell.w.CompareAndSwap(w, e.convert(w))
		case cell.w.CompareAndSwap(w, retiredWord):
			return c.gcra(e, w&(gateBit|tickMask))
		}
	}
}

// read returns the current epoch and cell's word, read between two loads
// of the epoch that found it the same: the word is then of that epoch's
// generation or one of the three before, never of one just started.
func (c *Cells) read(cell *Cell) (*cellEpoch, uint64) {
	for {
		e := c.ep.Load()
		w := cell.w.Load()
		if c.ep.Load() == e {
			return e, w
		}
	}
}

// gcra returns a GCRA of c's configuration counting from e's origin, whose
// word is w (gate and TAT, generation 0).
func (c *Cells) gcra(e *cellEpoch, w uint64) *GCRA {
	g := &GCRA{}
	g.c.ep.Store(&tatEpoch{tatConfig: c.cfg, origin: e.origin})
	g.c.state.Store(w)
	return g
}

// Adopt makes cell the state of alg, and reports true, when alg is a GCRA,
// TokenBucket or LeakyBucket of c's rate (as a reduced fraction) and burst
// in the one-word form, with its gate open, full at now and having seen no
// later instant: the state of a new algorithm, which a cell then decides
// exactly alike from now on. Otherwise it reports false and leaves cell
// alone. For a cell nobody else uses yet; alg is only read.
func (c *Cells) Adopt(cell *Cell, alg Algorithm, now time.Time) bool {
	var o *tatCore
	switch a := alg.(type) {
	case *GCRA:
		o = &a.c
	case *TokenBucket:
		o = &a.c
	case *LeakyBucket:
		o = &a.c
	default:
		return false
	}
	e := o.ep.Load()
	if !e.word || e.count != c.cfg.count || e.per != c.cfg.per || e.burst != c.cfg.burst {
		return false
	}
	w := o.state.Load()
	d := now.Sub(e.origin)
	if w&gateBit != 0 || gen(w) != e.gen&3 || d < 0 {
		return false
	}
	n := satMul(int64(d), e.count)
	if int64(w&tickMask) > n || e.last.Load() > n {
		return false
	}
	cell.w.Store(0)
	return true
}

// decide is the decision loop behind AllowAt, AllowOrCloseAt and
// TryAllowAt, as tatCore.decide without the latest instant and receipts.
func (c *Cells) decide(cell *Cell, at time.Time, cost int64, fast, closeGate bool) (Decision, bool) {
	for {
		e, w, n, _, ok := c.load(cell, at, fast)
		if !ok || fast && w&gateBit != 0 {
			return Decision{}, false
		}
		var d Decision
		next := e.judge(&d, int64(w&tickMask), n, cost)
		nw := w
		switch {
		case d.Allowed:
			nw = w&^tickMask | uint64(next)
		case closeGate && !d.RetryAt.IsZero():
			nw = w | gateBit
		}
		if nw == w || cell.w.CompareAndSwap(w, nw) {
			return d, true
		}
	}
}

// load returns the current epoch, cell's word converted to it, and at in
// its ticks (exact unless at lies before the origin). It reports ok false
// for a retired cell and, with fast, for an instant beyond the epoch,
// rather than start a generation, and for one before its origin: a caller
// that read its instant and was descheduled while the origin moved past
// it would be decided at the origin, later than its instant, and could
// take room that was spent at its own.
//
// The epoch is read again after the word: a word is only ever written in a
// generation already published, so when the epoch is still the same, the
// word's generation is the epoch's or one of the three before it, never a
// newer one.
func (c *Cells) load(cell *Cell, at time.Time, fast bool) (e *cellEpoch, w uint64, n int64, exact, ok bool) {
	for {
		e = c.ep.Load()
		n, exact, fits := e.cellTicks(at)
		if fast && !exact {
			// Before the origin: counted as the origin, a later instant,
			// where a cell spent then may be idle. The owner decides it.
			return nil, 0, 0, false, false
		}
		if !fits {
			if fast {
				return nil, 0, 0, false, false
			}
			c.rebase(e, at)
			continue
		}
		w = cell.w.Load()
		if w == retiredWord {
			return nil, 0, 0, false, false
		}
		if c.ep.Load() != e {
			continue
		}
		if gen(w) == e.gen&3 {
			return e, w, n, exact, true
		}
		cell.w.CompareAndSwap(w, e.convert(w))
	}
}

// cellTicks returns at in ticks since e's origin (an instant before it
// counts as the origin, and n is not exact); fits is false when at lies
// nMaxNs or more beyond it. Instants then stay below nMax - count ticks,
// and every TAT below tickMask.
func (e *cellEpoch) cellTicks(at time.Time) (n int64, exact, fits bool) {
	d := at.Sub(e.origin)
	if d >= time.Duration(e.nMaxNs) {
		return 0, false, false
	}
	return int64(max(d, 0)) * e.count, d >= 0, true
}

// rebase publishes the generation after e, its origin half a range before
// at (decisions a little in the past keep their meaning). The cells are
// converted lazily (load, Refresh). Owner only: a second caller's
// CompareAndSwap fails harmlessly.
func (c *Cells) rebase(e *cellEpoch, at time.Time) {
	next := &cellEpoch{tatEpoch: tatEpoch{tatConfig: c.cfg, origin: at.Add(-time.Duration(c.cfg.nMaxNs / 2)), gen: e.gen + 1}}
	next.before = [3]time.Time{e.origin, e.before[0], e.before[1]}
	c.ep.CompareAndSwap(e, next)
}

// convert returns w, written in one of the three generations before e's,
// in e's: the TAT shifted by the difference of the origins, 0 (idle) if it
// lies before e's origin. Generations before the first have the zero Time
// as origin, so that a zero word stays full.
func (e *cellEpoch) convert(w uint64) uint64 {
	k := (e.gen - gen(w)) & 3 // 1, 2 or 3
	shift := e.origin.Sub(e.before[k-1])
	return w&gateBit | (e.gen&3)<<genShift | uint64(shiftTicks(int64(w&tickMask), shift, e.count))
}
