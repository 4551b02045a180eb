package keyed

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/sat"
)

// A TryAcquire that finds a cell key's gate closed with nobody queued yet
// is behind the Acquire that closed it (the closer, see attempt), and
// behind every Acquire that queued after it before the owner judged it:
// a newcomer waits for all their units. Cells.WaitBehindAt counts one unit
// for all of them (its lower bound); the rest is counted here, with no
// round trip, as the closer travels:
//
//   - W1, from its closing CAS until it has pinned the key: it is between
//     two lock acquisitions on its own goroutine, its cost known to nobody
//     else. Waiting for it would make TryAcquire wait on another caller
//     (and deadlock a caller that closed a gate and then tries the key),
//     and a round trip would not help: the owner knows even less. So the
//     closer announces its cost in its shard's closing lanes *before* the
//     CAS, by its key's hash, and takes it back once pinned: whoever sees
//     the gate closed sees the cost. Two keys in W1 at once in one lane
//     add up, so a lane counts for at most the key's capacity (one closer
//     of a key at a time: its gate opens only after the owner answered
//     it); the error is then too long a RetryAfter, never too short.
//   - W2, pinned and not yet judged by the owner: its cost is in the
//     entry's way, with those that queued behind it (pin adds them; the
//     owner takes each off once judged, see shard.taken).
//
// A reader reads took, then the gate and the queue, then the lane, then
// way, then took again. An Acquire is in a lane until after it is in way,
// so a lane read that misses it finds it in way; and in way until after
// its judgment is counted in took, so with took unchanged, an Acquire the
// reads of way miss was judged before them, and the gate or the queue
// shows it. A reader that finds took changed reads again.

// closingLanes is the number of lanes a shard announces its closers' costs
// in: a few cache lines a shard, for the rare denial of an Acquire on a
// slot's cell.
const closingLanes = 16

func (s *shard[K]) lane(h uint64) int { return int((h >> 32) % closingLanes) } // not the shard's bits

// announce counts cost for the closer of key h, before its closing CAS
// (see above); withdraw takes it back, once the key is pinned or the CAS
// did not close the gate.
func (s *shard[K]) announce(h uint64, cost int64) { s.closing[s.lane(h)].Add(cost) }
func (s *shard[K]) withdraw(h uint64, cost int64) { s.closing[s.lane(h)].Add(-cost) }

// closingUnits is what h's lane says a closer of the key in W1 costs at
// most: nothing, or up to the key's capacity.
func (s *shard[K]) closingUnits(h uint64, capacity int64) int64 {
	return min(max(s.closing[s.lane(h)].Load(), 0), capacity)
}

// behindCloser is the RetryAfter of cost units at now behind the closer of
// e's gate and the Acquires behind it, or false when e is not in that
// state (not a cell key, an open gate, a queue the owner judged) or the
// owner judged one of its Acquires meanwhile, three times: the caller then
// goes the way it would without. From any goroutine, under the shard's
// lock (the owner's, or a caller's read or write lock).
func (s *shard[K]) behindCloser(e *entry[K], now time.Time, cost int64) (time.Duration, bool) {
	if !e.isCell() {
		return 0, false
	}
	cells := s.cells()
	for range 3 {
		took := e.took.Load()
		if w := e.waiters(); w != nil && !w.awaiting { // awaiting never changes: set before w is published
			return 0, false
		}
		wait, gated := cells.WaitBehindAt(&e.cell, now, cost)
		if !gated {
			return 0, false
		}
		ahead := s.closingUnits(e.h, cells.Capacity()) + e.way.Load()
		if e.took.Load() == took {
			return s.plusUnits(cells, wait, ahead-1), true
		}
	}
	return 0, false
}

// behindSlot is behindCloser for a gated cell still in its slot: the
// closer in W1 before the key has an entry (or after it lost one whose
// Acquires all left). Under the write lock.
func (s *shard[K]) behindSlot(cell *algorithms.Cell, h uint64, now time.Time, cost int64) (time.Duration, bool) {
	cells := s.cells()
	wait, gated := cells.WaitBehindAt(cell, now, cost)
	if !gated {
		return 0, false
	}
	return s.plusUnits(cells, wait, s.closingUnits(h, cells.Capacity())-1), true
}

// plusUnits adds to wait the time n more units take at the cells' rate
// (none for n < 1): WaitBehindAt counted one unit ahead, and the units
// ahead are granted one after the other. Rounded down, saturating.
func (s *shard[K]) plusUnits(cells *algorithms.Cells, wait time.Duration, n int64) time.Duration {
	if n < 1 {
		return wait
	}
	r := cells.Rate()
	d := sat.Times(n, int64(r.Per))
	if d == math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(sat.After(int64(wait), time.Duration(d/r.Count)))
}

// taken is for the owner once it has judged e's Acquire of cost (granted,
// queued, refused, cancelled while awaiting): it counts the judgment, then
// takes its units off way (see behindCloser).
func (s *shard[K]) taken(e *entry[K], cost int64) {
	e.took.Add(1)
	e.way.Add(-cost)
}
