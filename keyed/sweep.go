package keyed

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/internal/sat"
)

// The owner drops the keys back at full capacity by sweeping its table:
// keys keep no place in any schedule (a heap slot and a due instant each
// would cost more than the key's slot). A pass visits every slot once, in
// chunks under the write lock; it drops each key idle since before now (a
// cell key by retiring its cell, in one atomic step with the fast path's
// decisions, only if it is full), gives back the entry of each cell key
// that no longer needs one, and learns the earliest instant a key it kept
// will be idle. The next pass starts then, or when a request the owner
// served or a new key may have made one sooner, but never sooner than
// passGap after the last began: so a small table is swept at the instant
// its first key is idle, as a schedule per key would, and a large one at a
// bounded cost, its keys dropped within about passGap of being idle.
//
// Keys with waiters are the heap's: the pass leaves them alone. Keys with a
// request at the owner are looked at again by the pass after (recheck).
type sweep struct {
	t       *table // the table the pass under way walks; nil: none under way
	i       int    // its next slot
	acc     int64  // the earliest instant a key visited by the pass is idle
	due     int64  // the earliest instant the next pass should start; never: none
	started int64  // the start of the last pass
	evicted int    // the keys the pass under way dropped, for its log line
}

const never = math.MaxInt64

// sweepChunk is the slots a pass visits under one hold of the write lock,
// so that a creator or a caller of a key with an entry waits at most that
// long; between chunks the owner serves its inbox first.
const sweepChunk = 1024

// slotGap is the least time between the starts of two passes per slot of
// the table: a pass over a large table costs about 13ns a slot
// (BenchmarkSweepPass), so sweeping takes at most about 0.7% of an owner's
// time, and a shard of 125 000 keys (220 000 slots) drops its idle keys
// within about 0.45s.
const slotGap = 2 * time.Microsecond

// soon makes the next pass start no later than at.
func (s *shard[K]) soon(at int64) { s.sw.due = min(s.sw.due, at) }

// passGap is the least time between the starts of two passes.
func (s *shard[K]) passGap() int64 {
	return max(int64(recheck), int64(len(s.tab.Load().slots))*int64(slotGap))
}

// nextPass returns the instant the owner should wake for the next pass, or
// 0 for none.
func (s *shard[K]) nextPass() int64 {
	switch {
	case s.sw.t != nil:
		return s.last // a pass under way, cut short by requests: right after them
	case s.sw.due == never:
		return 0
	}
	return max(s.sw.due, s.sw.started+s.passGap())
}

// sweep runs the pass under way, or starts one if it is due, until it ends
// or requests wait in the inbox.
func (s *shard[K]) sweep(now int64) {
	if s.sw.t == nil {
		if s.sw.due == never || now < max(s.sw.due, s.sw.started+s.passGap()) {
			return
		}
		s.sw = sweep{t: s.tab.Load(), acc: never, due: never, started: now}
	}
	for {
		s.mu.Lock()
		if t := s.tab.Load(); t != s.sw.t {
			s.sw.t, s.sw.i = t, 0 // rebuilt meanwhile: every key is in the new table
		}
		t := s.sw.t
		end := min(s.sw.i+sweepChunk, len(t.slots))
		lk := s.look(now, len(t.slots))
		for i := s.sw.i; i < end; i++ {
			s.visit(&t.slots[i], &lk)
		}
		s.sw.i = end
		done := end == len(t.slots)
		live := s.live
		if done {
			s.shrink()
		}
		s.mu.Unlock()
		if done {
			s.sw.t = nil
			s.soon(s.sw.acc)
			s.logEvicted(now, s.sw.evicted, live)
			return
		}
		if s.o.Pending() {
			return
		}
		now = s.now()
	}
}

// look is what a chunk of a pass decides by.
type look struct {
	now int64
	// back is WithIdleTimeout before now: a cell full at back is idle.
	back time.Time
	// exact is true for a small table: the pass learns the instant each
	// key it keeps will be idle, so that the next pass starts then. A large
	// one is passed over every passGap while it has keys instead, which
	// spares a decision a slot: a pass then costs a few ns a slot.
	exact bool
}

// exactSlots is the largest table whose passes learn the instants.
const exactSlots = 1024

func (s *shard[K]) look(now int64, slots int) look {
	return look{now: now, back: s.l.t(now - int64(s.l.cfg.idle)), exact: slots <= exactSlots}
}

// visit looks at one slot for the pass, under the write lock.
func (s *shard[K]) visit(sl *slot, lk *look) {
	tag := sl.tag.Load()
	switch {
	case tag == 0 || tag == tomb:
		return
	case tag&fSide == 0:
		s.visitCell(sl, lk)
		return
	}
	now := lk.now
	e := s.entryOf(tag)
	switch {
	case e.waiters() != nil:
		return
	case e.busy():
		s.sw.acc = min(s.sw.acc, now+int64(recheck))
		return
	case e.isCell():
		s.demote(sl, e)
		s.visitCell(sl, lk)
		return
	}
	if idle := s.idleFrom(e, now); idle > now {
		s.sw.acc = min(s.sw.acc, idle)
		return
	}
	s.dropSide(ident(e.h))
	s.bury(sl)
	s.sw.evicted++
}

// idleFrom returns the instant from which e, an entry nobody waits on,
// counts as idle: WithIdleTimeout after the instant it is full again. A
// full algorithm tells no longer since when it has been (its ResetAt is
// now), so the entry remembers the instant it was first found or foretold
// full, until it is found in use again.
func (s *shard[K]) idleFrom(e *entry[K], now int64) int64 {
	reset := s.full(e, now)
	switch {
	case reset > now:
		e.fullAt = reset
	case e.fullAt == 0:
		e.fullAt = now
	}
	return sat.After(e.fullAt, s.l.cfg.idle)
}

// visitCell drops the cell key of sl if it is idle, else learns when it
// will be. The cell is retired only if it was full at lk.back already (so
// has stayed full since: only admissions empty it), in one atomic step
// with the fast path's decisions: one made before has left it less than
// full (and retiring fails), one made after finds it retired and looks
// again under the write lock held here, where the key is gone.
//
// An instant before the origin of the shard's cells counts as the origin,
// so a cell full since before it counts as idle whatever the timeout: the
// origin lies at least half a generation's range back (about a second at
// the finest rates, days or decades at common ones), and a cell remembers
// nothing further back.
func (s *shard[K]) visitCell(sl *slot, lk *look) {
	cells := s.cells()
	if cells.Retire(&sl.cell, lk.back) {
		if hook := s.l.cfg.retired; hook != nil {
			hook(heldSlot[K]{s, sl})
		}
		s.bury(sl)
		s.sw.evicted++
		return
	}
	idle := lk.now + int64(recheck) // in use this very moment, or a large table
	if lk.exact {
		reset := s.l.ns(cells.AllowAt(&sl.cell, s.l.t(lk.now), 0).ResetAt)
		idle = max(sat.After(reset, s.l.cfg.idle), lk.now+1)
	}
	s.sw.acc = min(s.sw.acc, idle)
}

// heldSlot is a slot as a caller holds it, with its shard: what the tests'
// retired hook is given.
type heldSlot[K comparable] struct {
	s  *shard[K]
	sl *slot
}
