package grpclimit

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

// OverflowKey names the pool that the methods (or targets) past the
// table's bound share, for Shedder.MethodConcurrency and
// Client.TargetConcurrency.
const OverflowKey = "(overflow)"

// pools is a table of adaptive pools, one per method or target, made at
// its first call, at most max of them plus one overflow pool: a server's
// methods and a client's targets are few, but a table that hostile
// method names (a server with an UnknownServiceHandler) could grow must
// still be bounded.
type pools struct {
	newCtl func() actor.Controller
	opts   []actor.AdaptiveOption
	name   string // pools are named name+" "+key
	max    int
	// m is read without a lock: a map never changed once published, copied
	// under mu to add a key. Keys are few and added once each, so the
	// copies cost little; an RWMutex's read lock made parallel requests
	// contend on its counter.
	m        atomic.Pointer[map[string]*keyPool]
	mu       sync.Mutex // taken to add a key, and to close
	overflow atomic.Pointer[keyPool]
	closed   atomic.Bool
}

// keyPool is one key's pool and the average time of its calls.
type keyPool struct {
	key  string
	pool *actor.AdaptivePool
	// latency is a moving average (1/8 weight per sample) of the time of
	// successful calls, in ns; updated without a lock, so two calls ending
	// at once may lose one sample.
	latency atomic.Int64
}

func newPools(name string, newCtl func() actor.Controller, opts []actor.AdaptiveOption, max int) (*pools, error) {
	t := &pools{newCtl: newCtl, opts: opts, name: name, max: max}
	t.m.Store(&map[string]*keyPool{})
	if newCtl == nil {
		return nil, errNilController
	}
	// One pool made and closed, so that a bad configuration fails here
	// rather than at the first call.
	p, err := actor.NewAdaptivePool(newCtl(), opts...)
	if err != nil {
		return nil, err
	}
	return t, p.Close()
}

// get returns key's pool, made at its first call, or the overflow pool
// when the table is full.
func (t *pools) get(key string) (*keyPool, error) {
	if t.closed.Load() {
		return nil, permits.ErrClosed
	}
	m := t.m.Load()
	if p := (*m)[key]; p != nil {
		return p, nil
	}
	if p := t.overflow.Load(); p != nil {
		return p, nil // set once the table is full
	}
	return t.add(key)
}

func (t *pools) add(key string) (*keyPool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return nil, permits.ErrClosed
	}
	old := *t.m.Load()
	if p, ok := old[key]; ok {
		return p, nil
	}
	if p := t.overflow.Load(); p != nil {
		return p, nil
	}
	full := len(old) >= t.max
	name := key
	if full {
		name = OverflowKey
	}
	pool, err := actor.NewAdaptivePool(t.newCtl(), append(t.opts[:len(t.opts):len(t.opts)], actor.WithName(t.name+" "+name))...)
	if err != nil {
		return nil, err // validated: a controller the constructor made wrong this time
	}
	p := &keyPool{key: name, pool: pool}
	if full {
		t.overflow.Store(p)
		return p, nil
	}
	m := maps.Clone(old)
	m[key] = p
	t.m.Store(&m)
	return p, nil
}

// stats returns the stats of key's pool (OverflowKey: the shared one).
func (t *pools) stats(key string) (actor.AdaptiveStats, bool) {
	p := (*t.m.Load())[key]
	if p == nil && key == OverflowKey {
		p = t.overflow.Load()
	}
	if p == nil {
		return actor.AdaptiveStats{}, false
	}
	return p.pool.Stats(), true
}

func (t *pools) len() int {
	return len(*t.m.Load())
}

func (t *pools) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed.Store(true)
	for _, p := range *t.m.Load() {
		_ = p.pool.Close()
	}
	if p := t.overflow.Load(); p != nil {
		_ = p.pool.Close()
	}
}

// done ends pm with o, and adds a success's time since start to the
// average.
func (p *keyPool) done(pm permits.Permit, o actor.Outcome, start time.Time) {
	if o == actor.Success {
		d := int64(time.Since(start))
		if old := p.latency.Load(); old == 0 {
			p.latency.Store(d)
		} else {
			p.latency.Store(old + (d-old)/8)
		}
	}
	p.pool.Done(pm, o)
}
