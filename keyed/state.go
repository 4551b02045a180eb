package keyed

import (
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// A key's state is a cell or an algorithm of its own. Most limiters give
// every key the same GCRA or bucket, and then each key's whole state is
// one atomic word (algorithms.Cell), decided against the rate, the burst
// and the origin its shard's algorithms.Cells keeps for all of them: 8
// bytes of state instead of a GCRA's 176. The limiter learns that shared
// configuration from the first GCRA, TokenBucket or LeakyBucket with a
// lock-free form that its constructor returns; every later key whose new
// algorithm has the same rate and burst (and is full, as new algorithms
// are) becomes a cell, and its algorithm is dropped. Keys whose algorithm
// differs (a larger quota for some users, another kind of algorithm) keep
// it, and the same path as before. The two kinds decide alike; a cell
// keeps no latest instant of its own (see algorithms.Cells), which only
// matters to decisions at instants earlier than one the key decided at.

// cellConfig is the limiter's shared configuration, once known.
type cellConfig struct {
	tmpl  algorithms.Algorithm // the algorithm it was learned from: what Quota reports (Capacity, Rate)
	cells []*algorithms.Cells  // one per shard: its owner alone moves the origin
}

// cellsFor returns the limiter's cell configuration, learning it from alg
// if it is not known yet and alg can teach it, or nil. now is the caller's
// clock reading: every shard's cells start with an origin that fits it.
func (l *Limiter[K]) cellsFor(alg algorithms.Algorithm, now time.Time) *cellConfig {
	if c := l.cellCfg.Load(); c != nil {
		return c
	}
	var rate algorithms.Rate
	switch a := alg.(type) {
	case *algorithms.GCRA:
		if !a.LockFree() {
			return nil
		}
		rate = a.Rate()
	case *algorithms.TokenBucket:
		if !a.LockFree() {
			return nil
		}
		rate = a.Rate()
	case *algorithms.LeakyBucket:
		if !a.LockFree() {
			return nil
		}
		rate = a.Rate()
	default:
		return nil
	}
	c := &cellConfig{tmpl: alg, cells: make([]*algorithms.Cells, len(l.shards))}
	for i := range c.cells {
		cells, err := algorithms.NewCells(rate, alg.Capacity())
		if err != nil {
			return nil // cannot happen for a lock-free configuration
		}
		cells.Advance(now) // before any cell is shared: no owner yet to mind it
		c.cells[i] = cells
	}
	l.cellCfg.CompareAndSwap(nil, c)
	return l.cellCfg.Load()
}

// cells returns the shard's Cells; only for a shard with cell keys.
func (s *shard[K]) cells() *algorithms.Cells { return s.l.cellCfg.Load().cells[s.idx] }

// newKey adds the key of hash h, whose state alg starts with at now, to
// the table, and returns its slot and tag: a cell key's alone (the zero
// cell is full, as alg is), any other key's with its entry. Under the
// write lock.
func (s *shard[K]) newKey(h uint64, alg algorithms.Algorithm, now time.Time) (*slot, uint64) {
	id := ident(h)
	var probe algorithms.Cell
	if c := s.l.cellsFor(alg, now); c != nil && c.cells[s.idx].Adopt(&probe, alg, now) {
		return s.insert(id), id
	}
	e := &entry[K]{h: h, hidx: -1}
	e.x.Store(&extra[K]{alg: alg})
	if g, ok := alg.(algorithms.Gated); ok && g.LockFree() {
		e.word.Store(fLockFree)
	}
	s.addSide(id, e)
	return s.insert(id | fSide), id | fSide
}

// template returns an algorithm that tells e's capacity and rate, for
// Quota: the key's own, or the one the cell configuration was learned
// from (also for a nil e: a cell key without an entry).
func (s *shard[K]) template(e *entry[K]) algorithms.Algorithm {
	if e == nil || e.isCell() {
		return s.l.cellCfg.Load().tmpl
	}
	return e.alg()
}

func (s *shard[K]) capacity(e *entry[K]) int64 {
	if e.isCell() {
		return s.cells().Capacity()
	}
	return e.alg().Capacity()
}

// allow decides for cost units of e at at, the owner's decision; with
// closeGate, a denial that waiting can cure also closes the fast path.
func (s *shard[K]) allow(e *entry[K], at, cost int64, closeGate bool) algorithms.Decision {
	t := s.l.t(at)
	switch {
	case e.isCell() && closeGate:
		return s.cells().AllowOrCloseAt(&e.cell, t, cost)
	case e.isCell():
		return s.cells().AllowAt(&e.cell, t, cost)
	case closeGate && e.lockFree():
		return e.alg().(algorithms.Gated).AllowOrCloseAt(t, cost)
	}
	return e.alg().AllowAt(t, cost)
}

// try is the fast path's decision on the lock-free state of e: its cell
// when cell is true (what the caller found), else its algorithm; the
// whole decision with full, the lean one otherwise. open is false when the
// gate is closed (or the cell retired, or now beyond what its cells count
// yet); nothing changed then.
func (s *shard[K]) try(e *entry[K], cell bool, now time.Time, cost int64, full bool) (d algorithms.Decision, open bool) {
	if cell {
		return tryCell(s.cells(), &e.cell, now, cost, full)
	}
	g := e.alg().(algorithms.Gated)
	if full {
		return g.TryAllowAt(now, cost)
	}
	ok, retry, open := g.TryAdmitAt(now, cost)
	return algorithms.Decision{Allowed: ok, RetryAt: now.Add(retry)}, open
}

// tryCell is try on cell, a slot's or an entry's, from any goroutine.
func tryCell(cells *algorithms.Cells, cell *algorithms.Cell, now time.Time, cost int64, full bool) (algorithms.Decision, bool) {
	if full {
		return cells.TryAllowAt(cell, now, cost)
	}
	ok, retry, open := cells.TryAdmitAt(cell, now, cost)
	return algorithms.Decision{Allowed: ok, RetryAt: now.Add(retry)}, open
}

// closeCell is tryCell that closes the gate of cell on a denial, in the
// same CAS: for an Acquire denied without a lock (see attempt).
func closeCell(cells *algorithms.Cells, cell *algorithms.Cell, now time.Time, cost int64, full bool) (algorithms.Decision, bool) {
	if full {
		return cells.TryAllowOrCloseAt(cell, now, cost)
	}
	ok, retry, open := cells.TryAdmitOrCloseAt(cell, now, cost)
	return algorithms.Decision{Allowed: ok, RetryAt: now.Add(retry)}, open
}

// held reports whether e, which nobody waits on, is a cell key whose gate
// an Acquire denied before its promotion closed (see attempt): one still
// on its way to the owner, who reopens the gate when it answers it.
// Owner only.
func (s *shard[K]) held(e *entry[K]) bool { return e.isCell() && s.cells().Gated(&e.cell) }

// openGate reopens the fast path of a key whose queue is empty.
func (s *shard[K]) openGate(e *entry[K]) {
	switch {
	case e.isCell():
		s.cells().OpenGate(&e.cell)
	case e.lockFree():
		e.alg().(algorithms.Gated).OpenGate()
	}
}

// clone returns a copy of e's state to predict on, if it has one.
func (s *shard[K]) clone(e *entry[K]) (algorithms.Algorithm, bool) {
	if e.isCell() {
		return s.cells().Clone(&e.cell), true
	}
	if c, ok := e.alg().(algorithms.Cloner); ok {
		return c.Clone(), true
	}
	return nil, false
}

// refreshCells converts every cell of the shard to the generation of its
// cells that has just started, so that none is ever three generations
// behind (see algorithms.Cells). O(live keys), under the write lock, once
// per generation: about every half second for the rates with the finest
// ticks (2^30 per ns), every eighteen years at 100 per minute.
func (s *shard[K]) refreshCells(c *algorithms.Cells, gen uint64) {
	s.mu.Lock()
	t := s.tab.Load()
	for i := range t.slots {
		if sl := &t.slots[i]; sl.tag.Load()&(fSide|tagLive) == tagLive {
			c.Refresh(&sl.cell)
		}
	}
	for _, e := range s.side {
		if e.isCell() {
			c.Refresh(&e.cell)
		}
	}
	s.cellGen = gen
	s.mu.Unlock()
}
