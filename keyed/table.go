package keyed

import (
	"hash/maphash"
	"sync/atomic"
)

// table is a shard's index of its live keys: open addressing with linear
// probing over atomic pointers, so that the fast path finds a key with
// loads alone, never a lock, while the shard's write lock serialises the
// writers (a new key, a dropped one, a resize). Against a Go map it saves
// the lock and two thirds of the slot: a slot is one pointer, since the
// key lives in the entry.
//
// A reader may hold a table that a resize has since replaced, or find an
// entry a moment before the owner drops it. Neither misleads it: a key
// missing from an old table is looked for again under the write lock, and
// a dropped entry says so itself (a retired cell, or fDropped), so the
// reader looks again the same way. A replaced table is never written
// again.
type table[K comparable] struct {
	slots []atomic.Pointer[entry[K]]
	mask  uint64
}

// The shard picks with the hash's low bits (at most 12), the slot with the
// bits above them.
const slotShift = 12

const (
	minSlots = 8
	// A table is rebuilt when live keys and tombstones would fill three
	// quarters of it (into one twice the live keys, at most half full), and
	// when the live keys fall below an eighth of it, so that the memory of
	// a burst of keys is given back once they have gone idle.
	growNum, growDen = 3, 4
	shrinkDen        = 8
)

func newTable[K comparable](n int) *table[K] {
	return &table[K]{slots: make([]atomic.Pointer[entry[K]], n), mask: uint64(n - 1)}
}

// find returns key's entry, or nil. Safe from any goroutine.
func (t *table[K]) find(key K, h uint64, tomb *entry[K]) *entry[K] {
	for i := h >> slotShift & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i].Load()
		if e == nil {
			return nil
		}
		if e != tomb && e.key == key {
			return e
		}
	}
}

// The writers below hold the shard's write lock.

// insert adds e, whose key is not in the table, with hash h.
func (s *shard[K]) insert(e *entry[K], h uint64) {
	t := s.tab.Load()
	if (s.live+s.tombs+1)*growDen > len(t.slots)*growNum {
		t = s.rebuild(s.live + 1)
	}
	for i := h >> slotShift & t.mask; ; i = (i + 1) & t.mask {
		switch t.slots[i].Load() {
		case s.l.tomb:
			s.tombs--
		case nil:
		default:
			continue
		}
		t.slots[i].Store(e)
		s.live++
		return
	}
}

// delete takes e out of the table, leaving a tombstone: readers probing
// past its slot for another key must still go on.
func (s *shard[K]) delete(e *entry[K]) {
	t := s.tab.Load()
	for i := maphash.Comparable(s.l.seed, e.key) >> slotShift & t.mask; ; i = (i + 1) & t.mask {
		if t.slots[i].Load() == e {
			t.slots[i].Store(s.l.tomb)
			s.live--
			s.tombs++
			return
		}
	}
}

// shrink rebuilds the table once its live keys fill less than an eighth
// of it: O(live keys), at most once per halving.
func (s *shard[K]) shrink() {
	if n := len(s.tab.Load().slots); n > minSlots && s.live*shrinkDen < n {
		s.rebuild(s.live)
	}
}

// rebuild replaces the table with one for n live keys, at most half full,
// without tombstones, and returns it.
func (s *shard[K]) rebuild(n int) *table[K] {
	size := minSlots
	for size < 2*n {
		size <<= 1
	}
	old, t := s.tab.Load(), newTable[K](size)
	for i := range old.slots {
		e := old.slots[i].Load()
		if e == nil || e == s.l.tomb {
			continue
		}
		for j := maphash.Comparable(s.l.seed, e.key) >> slotShift & t.mask; ; j = (j + 1) & t.mask {
			if t.slots[j].Load() == nil {
				t.slots[j].Store(e)
				break
			}
		}
	}
	s.tombs = 0
	s.tab.Store(t)
	return t
}

// each calls f for every live entry of the table current when it starts;
// the caller holds the shard's lock, read or write.
func (s *shard[K]) each(f func(*entry[K])) {
	t := s.tab.Load()
	for i := range t.slots {
		if e := t.slots[i].Load(); e != nil && e != s.l.tomb {
			f(e)
		}
	}
}
