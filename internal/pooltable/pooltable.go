package pooltable

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/permits"
)

// Overflow is the key of the pool that the keys past the bound share, for
// Lookup, and the name its pool is given.
const Overflow = "(overflow)"

// Config is what a Table makes its pools from.
type Config struct {
	// Pkg names the package whose configuration errors the table returns.
	Pkg string
	// Name prefixes the pools' names: a key's pool is Name+" "+key.
	Name string
	// NewController makes each pool's controller, one per key.
	NewController func() actor.Controller
	// Options are every pool's options (actor.WithLimits, ...).
	Options []actor.AdaptiveOption
	// Max is how many keys get a pool of their own (≥ 1).
	Max int
}

// Table is a bounded map from keys to adaptive pools made on first use;
// see the package doc for the bound, the overflow pool and Close. It is
// safe for concurrent use.
type Table struct {
	cfg      Config
	m        atomic.Pointer[map[string]*Entry] // never changed once stored
	mu       sync.Mutex                        // taken to add a key, and to close
	overflow atomic.Pointer[Entry]             // set once the table is full
	closed   atomic.Bool
}

// New returns an empty table. It fails, matching permits.ErrInvalidConfig,
// for a nil NewController, a Max below 1, or Options that
// actor.NewAdaptivePool refuses: it makes and closes one pool so that a bad
// configuration fails here rather than at the first key.
func New(cfg Config) (*Table, error) {
	switch {
	case cfg.NewController == nil:
		return nil, configerr.Errorf(cfg.Pkg, "a pool table needs a controller constructor, got nil")
	case cfg.Max < 1:
		return nil, configerr.Errorf(cfg.Pkg, "a pool table's bound must be at least 1, got %d", cfg.Max)
	}
	p, err := actor.NewAdaptivePool(cfg.NewController(), cfg.Options...)
	if err != nil {
		return nil, err
	}
	if err := p.Close(); err != nil {
		return nil, err
	}
	t := &Table{cfg: cfg}
	t.m.Store(&map[string]*Entry{})
	return t, nil
}

// Get returns key's entry, made at its first use, or the overflow entry
// once the table is full. It fails with permits.ErrClosed after Close.
func (t *Table) Get(key string) (*Entry, error) {
	if t.closed.Load() {
		return nil, permits.ErrClosed
	}
	if e := (*t.m.Load())[key]; e != nil {
		return e, nil
	}
	if e := t.overflow.Load(); e != nil {
		return e, nil
	}
	return t.add(key)
}

// Lookup returns key's entry without making one, nil if it has none;
// Overflow names the shared one (unless a key of that name has its own).
func (t *Table) Lookup(key string) *Entry {
	if e := (*t.m.Load())[key]; e != nil || key != Overflow {
		return e
	}
	return t.overflow.Load()
}

// Len returns how many keys have a pool of their own (the overflow pool
// not counted).
func (t *Table) Len() int { return len(*t.m.Load()) }

// Close closes every pool, once each; Get fails after it. It is
// idempotent and returns nil.
func (t *Table) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Swap(true) {
		return nil
	}
	for _, e := range *t.m.Load() {
		_ = e.Pool.Close()
	}
	if e := t.overflow.Load(); e != nil {
		_ = e.Pool.Close()
	}
	return nil
}

// add makes key's entry, or the overflow entry if the table is full.
// Under mu it looks again: another caller may have added it, or filled
// the table, or closed it, since Get looked.
func (t *Table) add(key string) (*Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return nil, permits.ErrClosed // no pool made after Close: none leaks
	}
	old := *t.m.Load()
	if e, ok := old[key]; ok {
		return e, nil
	}
	if e := t.overflow.Load(); e != nil {
		return e, nil
	}
	full := len(old) >= t.cfg.Max
	name := key
	if full {
		name = Overflow
	}
	opts := append(t.cfg.Options[:len(t.cfg.Options):len(t.cfg.Options)], actor.WithName(t.cfg.Name+" "+name))
	pool, err := actor.NewAdaptivePool(t.cfg.NewController(), opts...)
	if err != nil {
		return nil, err // validated by New: a controller made wrong this time
	}
	e := &Entry{Key: name, Pool: pool}
	if full {
		t.overflow.Store(e)
		return e, nil
	}
	m := maps.Clone(old)
	m[key] = e
	t.m.Store(&m)
	return e, nil
}
