package keyed

import (
	"math/bits"
	"sync/atomic"

	"github.com/sluicehq/sluice/algorithms"
)

// table is a shard's index of its live keys and, for the common key, its
// whole state: open addressing with linear probing over 16-byte slots, a
// tag (the key's 64-bit hash) beside the key's cell, inline. The fast path
// finds a key and decides on its cell with loads and one CAS, never a
// lock, while the shard's write lock serialises the writers (a new key, a
// dropped one, a key moved into or out of the side map, a rebuild).
//
// The table keeps no key, only its hash (see ident): two keys of a shard
// whose 64-bit hashes are equal share one slot, so one limit, as
// httprate's keys do. With four shards or more, the shard's bits are part
// of what the tag compares, so that is two keys of one 64-bit hash: about
// n²/2⁶⁵ for n live keys, 3·10⁻⁸ at a million (TestHashCollisionsShareALimit).
//
// A key that needs more than a cell (waiters, a request at the owner, an
// algorithm of its own) has an entry in the shard's side map, and fSide in
// its tag: the fast path of such a key takes the read lock and decides on
// the entry, as before. Its slot's cell is then retired, unused.
//
// A reader may hold a slot a moment before the owner drops its key, moves
// its cell into an entry, or a rebuild copies it away. None of them
// misleads it: each retires the slot's cell first (a drop only if the cell
// is full, in one atomic step with the decisions on it), so that the
// reader's CAS fails and it looks again under the lock. A slot's cell is
// never given to another key: a dropped key leaves a tombstone, reused
// only by a rebuild, into a new table; a replaced table is never written
// again.
type table struct{ slots []slot }

type slot struct {
	tag  atomic.Uint64 // 0: never used; tomb: a dropped key; else ident(h), with fSide when it has an entry
	cell algorithms.Cell
}

const (
	fSide   = 1 << 0 // the key has an entry in the side map
	tagLive = 1 << 1 // set in every live key's tag: never 0 nor tomb
	tomb    = fSide  // a dropped key's slot: no live tag equals it
)

// ident is the tag of the key whose hash is h: its two low bits make way
// for fSide and tagLive. They are also the shard's lowest bits, so with
// four shards or more nothing of the hash is lost.
func ident(h uint64) uint64 { return h&^(fSide|tagLive) | tagLive }

const (
	minSlots = 8
	// A table is rebuilt when live keys and tombstones would fill 4/5 of
	// it, into one where the live keys fill 4/7: between 20 and 28 bytes a
	// key, where probes stay short (about 3 for a key that is there at the
	// most crowded). It is rebuilt smaller when the live keys fall below a
	// quarter of it, so that the memory of a burst of keys is given back
	// once they have gone idle.
	growNum, growDen = 4, 5
	sizeNum, sizeDen = 7, 4
	shrinkDen        = 4
)

func newTable(n int) *table { return &table{slots: make([]slot, n)} }

// home is the first slot to probe for tag: the table's size times the
// hash's high bits, so that any size will do and the shard's low bits play
// no part.
func (t *table) home(tag uint64) int {
	hi, _ := bits.Mul64(tag, uint64(len(t.slots)))
	return int(hi)
}

// find returns the slot of the key tagged id and its tag (with fSide if it
// has an entry), or nil. Safe from any goroutine.
func (t *table) find(id uint64) (*slot, uint64) {
	n := len(t.slots)
	for i := t.home(id); ; {
		sl := &t.slots[i]
		tag := sl.tag.Load()
		if tag&^fSide == id {
			return sl, tag
		}
		if tag == 0 {
			return nil, 0
		}
		if i++; i == n {
			i = 0
		}
	}
}

// The writers below hold the shard's write lock.

// insert adds a slot for the key tagged tag, which is not in the table: a
// cell key's starts full (the zero cell). It never reuses a tombstone (see
// table).
func (s *shard[K]) insert(tag uint64) *slot {
	t := s.tab.Load()
	if (s.live+s.tombs+1)*growDen > len(t.slots)*growNum {
		t = s.rebuild(s.live + 1)
	}
	n := len(t.slots)
	for i := t.home(tag); ; {
		if sl := &t.slots[i]; sl.tag.Load() == 0 {
			sl.tag.Store(tag)
			s.live++
			return sl
		}
		if i++; i == n {
			i = 0
		}
	}
}

// bury marks sl, whose cell is retired, as a dropped key's.
func (s *shard[K]) bury(sl *slot) {
	sl.tag.Store(tomb)
	s.live--
	s.tombs++
	s.l.keys.Add(-1)
}

// shrink rebuilds the table once its live keys fill less than a quarter
// of it: O(live keys), at most once per halving.
func (s *shard[K]) shrink() {
	if n := len(s.tab.Load().slots); n > minSlots && s.live*shrinkDen < n {
		s.rebuild(s.live)
	}
}

// rebuild replaces the table with one for n live keys, without
// tombstones, and returns it. Each live cell is retired in the old table
// as it is copied (moveCell), so that a reader still deciding there fails
// and looks again; the new table is published after the copy, under the
// lock readers look again under.
func (s *shard[K]) rebuild(n int) *table {
	old, t := s.tab.Load(), newTable(max(minSlots, n*sizeNum/sizeDen+1))
	for i := range old.slots {
		o := &old.slots[i]
		tag := o.tag.Load()
		if tag == 0 || tag == tomb {
			continue
		}
		for j := t.home(tag); ; {
			if sl := &t.slots[j]; sl.tag.Load() == 0 {
				if tag&fSide == 0 {
					s.moveCell(&sl.cell, &o.cell)
				}
				sl.tag.Store(tag)
				break
			}
			if j++; j == len(t.slots) {
				j = 0
			}
		}
	}
	s.tombs = 0
	s.tab.Store(t)
	return t
}
