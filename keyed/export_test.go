package keyed

import (
	"context"
	"time"
	"unsafe"
)

// SlotSize is the size of a slot of a shard's table: all a cell key
// without an entry costs.
const SlotSize = unsafe.Sizeof(slot{})

// SlotGap is the least time between two passes of an owner, per slot of
// its table.
const SlotGap = slotGap

// IsCell reports whether key is live with a cell for its state.
func IsCell[K comparable](l *Limiter[K], key K) bool {
	return locate(l, key, func(_ *shard[K], _ *slot, e *entry[K]) bool { return e == nil || e.isCell() })
}

// HasEntry reports whether key is live with an entry.
func HasEntry[K comparable](l *Limiter[K], key K) bool {
	s, h, _ := l.shard(key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	sl, tag := s.tab.Load().find(ident(h))
	return sl != nil && tag&fSide != 0
}

// Entries returns the entries of every shard, in all.
func Entries[K comparable](l *Limiter[K]) (n int) {
	for _, s := range l.shards {
		s.mu.RLock()
		n += len(s.side)
		s.mu.RUnlock()
	}
	return n
}

// Generations returns the generations the shards' cells have started, in
// all.
func Generations[K comparable](l *Limiter[K]) (n uint64) {
	if c := l.cellCfg.Load(); c != nil {
		for _, cells := range c.cells {
			n += cells.Generation()
		}
	}
	return n
}

// WhileLocked calls f while holding the write lock of key's shard, which
// the fast path of a cell key must never need.
func WhileLocked[K comparable](l *Limiter[K], key K, f func()) {
	s, _, _ := l.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// TableSlots returns the slots of every shard's table, in all.
func TableSlots[K comparable](l *Limiter[K]) (n int) {
	for _, s := range l.shards {
		s.mu.RLock()
		n += len(s.tab.Load().slots)
		s.mu.RUnlock()
	}
	return n
}

// WithRetiredHook makes the owners call f with the slot of a cell key
// right after retiring its cell to drop the key, under the write lock,
// before its tag says it is gone: where a caller that found the slot
// without a lock races the drop.
func WithRetiredHook(f func(slot any)) Option {
	return optionFunc(func(c *config) { c.retired = f })
}

// Slot returns the slot of key, a cell key without an entry, as a caller
// that found it without a lock holds it; nil for any other key.
func Slot[K comparable](l *Limiter[K], key K) any {
	s, h, _ := l.shard(key)
	if sl, tag := s.tab.Load().find(ident(h)); sl != nil && tag&fSide == 0 {
		return heldSlot[K]{s, sl}
	}
	return nil
}

// DecideOnSlot decides for cost units on the cell of sl, a slot found by
// Slot, as the fast path does once it has found the key's tag there, and
// reports whether the cell was open.
func DecideOnSlot[K comparable](l *Limiter[K], sl any, cost int64) (ok, open bool) {
	h := sl.(heldSlot[K])
	d, open := tryCell(h.s.cells(), &h.sl.cell, l.cfg.clock.Now(), cost, false)
	return d.Allowed, open
}

// Pin pins e as a caller on its way to the owner does, under the read
// lock, and reports whether it found e gone (no longer its key's entry:
// nothing pinned then).
func Pin[K comparable](l *Limiter[K], e any) (gone bool) {
	en := e.(*entry[K])
	s := l.shardOf(en)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.side[ident(en.h)] != en {
		return true
	}
	s.pin(en, time.Time{}, 0)
	return false
}

// PinRaw counts a pin on e without looking at anything: a caller that
// pinned it under the lock and is on its way to the owner.
func PinRaw[K comparable](e any) { e.(*entry[K]).word.Add(pinStep) }

// Pinned returns key's entry pinned, as by a caller on its way to the
// owner: promoted and pinned under the shard's lock, so that the owner
// cannot give the entry back between the two.
func Pinned[K comparable](l *Limiter[K], key K) any {
	s, h, _ := l.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, tag := s.tab.Load().find(ident(h))
	if sl == nil {
		return nil
	}
	var e *entry[K]
	if tag&fSide == 0 {
		e = s.promote(sl, h)
	} else {
		e = s.entryOf(tag)
	}
	e.word.Add(pinStep)
	return e
}

// SendPinned sends the request of a caller that pinned e, for cost, to the
// owner, as TryAcquire does, and returns its error.
func SendPinned[K comparable](l *Limiter[K], e any, cost int64) error {
	return sendPinned(l, e, opTry, cost)
}

func (l *Limiter[K]) shardOf(e *entry[K]) *shard[K] { return l.shards[e.h&l.mask] }

func sendPinned[K comparable](l *Limiter[K], e any, o op, cost int64) error {
	en := e.(*entry[K])
	s := l.shardOf(en)
	c := s.roundTrip(context.Background(), s.newCall(context.Background(), o, en, cost, l.stamp()))
	_, _, err := s.answer(context.Background(), c, en, cost)
	return err
}

// Entry returns key's entry, or nil when the key is not live. A cell key
// without one gets one, as a request for the owner gives it: the owner's
// next pass gives it back unless it is pinned by then.
func Entry[K comparable](l *Limiter[K], key K) any {
	s, h, _ := l.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, tag := s.tab.Load().find(ident(h))
	switch {
	case sl == nil:
		return nil
	case tag&fSide == 0:
		return s.promote(sl, h)
	}
	return s.entryOf(tag)
}

// AcquirePinned sends the Acquire of a caller that pinned e, for cost, to
// the owner, and returns its error: a caller that checked its cost before
// the owner lowered the key's burst.
func AcquirePinned[K comparable](l *Limiter[K], e any, cost int64) error {
	return sendPinned(l, e, opAcquire, cost)
}

// FastPath reports whether a request for key would be decided on the
// caller's goroutine now: the key is live with a lock-free state, nothing
// of it is at the owner, and its gate is open.
func FastPath[K comparable](l *Limiter[K], key K) bool {
	return locate(l, key, func(s *shard[K], sl *slot, e *entry[K]) bool {
		if e == nil {
			_, open := tryCell(s.cells(), &sl.cell, l.cfg.clock.Now(), 0, true)
			return open
		}
		w := e.word.Load()
		if w != fCell && w != fLockFree {
			return false
		}
		_, open := s.try(e, w == fCell, l.cfg.clock.Now(), 0, true)
		return open
	})
}

// locate finds key under its shard's read lock and reports f of its slot
// (a cell key without an entry) or of its entry; false when it is not live.
func locate[K comparable](l *Limiter[K], key K, f func(s *shard[K], sl *slot, e *entry[K]) bool) bool {
	s, h, _ := l.shard(key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	sl, tag := s.tab.Load().find(ident(h))
	switch {
	case sl == nil:
		return false
	case tag&fSide == 0:
		return f(s, sl, nil)
	}
	return f(s, nil, s.entryOf(tag))
}

// WithDetachedHook makes the owners call f with the entry of a cell key
// right after detaching its cell (SetRate), under the write lock, before
// its flags say it is no longer a cell.
func WithDetachedHook(f func(e any)) Option { return optionFunc(func(c *config) { c.detached = f }) }

// DecideOnCell decides for cost units on the cell of e, an entry, as the
// fast path does once it has found the key a cell with nothing pinned, and
// reports whether the cell was open.
func DecideOnCell[K comparable](l *Limiter[K], e any, cost int64) (ok, open bool) {
	en := e.(*entry[K])
	d, open := l.shardOf(en).try(en, true, l.cfg.clock.Now(), cost, false)
	return d.Allowed, open
}

// WithClosedHook makes an Acquire denied on its slot's cell without a lock
// call f right after it closed the cell's gate, on its own goroutine and
// before it takes any lock: where it races the callers that come after it.
func WithClosedHook(f func()) Option { return optionFunc(func(c *config) { c.closed = f }) }

// Gated reports whether key is live with a cell whose gate is closed.
func Gated[K comparable](l *Limiter[K], key K) bool {
	return locate(l, key, func(s *shard[K], sl *slot, e *entry[K]) bool {
		if e == nil {
			return s.cells().Gated(&sl.cell)
		}
		return e.isCell() && s.cells().Gated(&e.cell)
	})
}

// UnitsOnTheirWay returns the units of key's Acquires that its entry
// counts as pinned and not yet judged by the owner (entry.way); 0 for a
// key without an entry.
func UnitsOnTheirWay[K comparable](l *Limiter[K], key K) int64 {
	s, h, _ := l.shard(key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sl, tag := s.tab.Load().find(ident(h)); sl != nil && tag&fSide != 0 {
		return s.entryOf(tag).way.Load()
	}
	return 0
}
