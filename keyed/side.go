package keyed

// The side map holds the entries of a shard's keys that need one (see
// entry), by tag. Its writers hold the write lock; the fast path of a key
// whose tag says it has an entry reads it under the read lock.

// promote gives cell key sl, found without an entry, one, and moves its
// cell into it: the slot's cell is retired first, so that a caller
// deciding on it without a lock fails and looks again under the lock,
// where it finds the entry. Under the write lock.
func (s *shard[K]) promote(sl *slot, h uint64) *entry[K] {
	e := &entry[K]{h: h, hidx: -1}
	e.word.Store(fCell)
	s.moveCell(&e.cell, &sl.cell)
	id := ident(h)
	s.addSide(id, e)
	sl.tag.Store(id | fSide)
	return e
}

// demote gives back the entry of a cell key that no longer needs one:
// nobody waits on it and nothing of it is at the owner. Its cell goes back
// to its slot, whose tag then sends the fast path there again. A caller
// holding the slot since before the key was promoted may decide on it
// again: it is the same key's cell, with its current state. The gate goes
// with the cell: with nobody waiting it is open, or closed by an Acquire
// on its way to the owner (see attempt), which must keep it closed. Owner
// only, under the write lock.
func (s *shard[K]) demote(sl *slot, e *entry[K]) {
	s.moveCell(&sl.cell, &e.cell)
	id := ident(e.h)
	s.dropSide(id)
	sl.tag.Store(id)
}

func (s *shard[K]) addSide(id uint64, e *entry[K]) {
	if s.side == nil {
		s.side = make(map[uint64]*entry[K])
	}
	s.side[id] = e
}

// dropSide takes id's entry out of the map, and gives the map's memory
// back with its last entry: a map never shrinks, and a burst of waiting
// keys would otherwise leave it at its peak.
func (s *shard[K]) dropSide(id uint64) {
	delete(s.side, id)
	if len(s.side) == 0 {
		s.side = nil
	}
}

// entryOf returns the entry of the key whose slot's tag is tag (with
// fSide). Under the lock.
func (s *shard[K]) entryOf(tag uint64) *entry[K] { return s.side[tag&^fSide] }
