package keyed

import (
	"context"
	"time"
	"unsafe"
)

// EntrySize is the size of a live string key's entry.
const EntrySize = unsafe.Sizeof(entry[string]{})

// IsCell reports whether key is live with a cell for its state.
func IsCell[K comparable](l *Limiter[K], key K) bool {
	s, h := l.shard(key)
	e := s.tab.Load().find(key, h, l.tomb)
	return e != nil && e.isCell()
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
	s, _ := l.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// TableSlots returns the slots of every shard's table, in all.
func TableSlots[K comparable](l *Limiter[K]) (n int) {
	for _, s := range l.shards {
		n += len(s.tab.Load().slots)
	}
	return n
}

// WithRetiredHook makes the owners call f with the entry of a cell key
// right after retiring its cell to drop the key, before they look at its
// pins: where a caller's pin races the drop.
func WithRetiredHook(f func(e any)) Option { return optionFunc(func(c *config) { c.retired = f }) }

// Pin pins e as a caller on its way to the owner does, and reports whether
// it found e gone (the pin then taken back).
func Pin[K comparable](l *Limiter[K], e any) (gone bool) {
	en := e.(*entry[K])
	s, _ := l.shard(en.key)
	return s.pin(en, time.Time{}, false).verdict == vGone
}

// PinRaw counts a pin on e without looking at its cell: a caller that
// pinned and saw the cell live just before it was retired.
func PinRaw[K comparable](e any) { e.(*entry[K]).word.Add(pinStep) }

// SendPinned sends the request of a caller that pinned e, for cost, to the
// owner, as TryAcquire does, and returns its error.
func SendPinned[K comparable](l *Limiter[K], e any, cost int64) error {
	return sendPinned(l, e, opTry, cost)
}

func sendPinned[K comparable](l *Limiter[K], e any, o op, cost int64) error {
	en := e.(*entry[K])
	s, _ := l.shard(en.key)
	c := s.roundTrip(context.Background(), s.newCall(context.Background(), o, en, cost, l.stamp()))
	_, _, err := s.answer(context.Background(), c, en, cost)
	return err
}

// Entry returns key's entry, or nil when the key is not live.
func Entry[K comparable](l *Limiter[K], key K) any {
	s, h := l.shard(key)
	if e := s.tab.Load().find(key, h, l.tomb); e != nil {
		return e
	}
	return nil
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
	s, h := l.shard(key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.tab.Load().find(key, h, l.tomb)
	if e == nil {
		return false
	}
	w := e.word.Load()
	if w != fCell && w != fLockFree {
		return false
	}
	_, open := s.try(e, w == fCell, l.cfg.clock.Now(), 0, true)
	return open
}

// WithDetachedHook makes the owners call f with the entry of a cell key
// right after detaching its cell (SetRate), before its flags say it is no
// longer a cell: where a caller that found it a cell races the change.
func WithDetachedHook(f func(e any)) Option { return optionFunc(func(c *config) { c.detached = f }) }

// DecideOnCell decides for cost units on e's cell as the fast path does
// once it has found the key a cell with nothing pinned, and reports
// whether the cell was open.
func DecideOnCell[K comparable](l *Limiter[K], e any, cost int64) (ok, open bool) {
	en := e.(*entry[K])
	s, _ := l.shard(en.key)
	d, open := s.try(en, true, l.cfg.clock.Now(), cost, false)
	return d.Allowed, open
}
