package httplimit

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

// routePools is a Shedder's table of pools, one per route, made at the
// route's first request, at most max of them plus the overflow pool.
// After the first request of each route the table only grows when a new
// route comes, which a ServeMux's fixed set of patterns makes rare.
type routePools struct {
	newCtl func() actor.Controller
	opts   []actor.AdaptiveOption
	max    int
	// m is read without a lock: a map never changed once published, copied
	// under mu to add a key. Keys are few and added once each, so the
	// copies cost little; an RWMutex's read lock made parallel requests
	// contend on its counter.
	m        atomic.Pointer[map[string]*routePool]
	mu       sync.Mutex // taken to add a key, and to close
	overflow atomic.Pointer[routePool]
	closed   atomic.Bool
}

// routePool is one route's pool and what Retry-After is made of.
type routePool struct {
	name string
	pool *actor.AdaptivePool
	// latency is a moving average (1/8 weight to each sample) of the
	// handler's time on this route, in ns. Updated without a lock: two
	// requests ending at once may lose one sample, which an average
	// shrugs off.
	latency atomic.Int64
}

func newRoutePools(newCtl func() actor.Controller, opts []actor.AdaptiveOption, max int) *routePools {
	t := &routePools{newCtl: newCtl, opts: opts, max: max}
	t.m.Store(&map[string]*routePool{})
	return t
}

// validate makes, and closes, one pool, so that a bad configuration fails
// NewShedder rather than the first request.
func (t *routePools) validate() error {
	p, err := actor.NewAdaptivePool(t.newCtl(), t.opts...)
	if err != nil {
		return err
	}
	return p.Close()
}

// get returns route's pool, made at its first request, or the overflow
// pool when the table is full.
func (t *routePools) get(route string) (*routePool, error) {
	if t.closed.Load() {
		return nil, permits.ErrClosed
	}
	m := t.m.Load()
	if p := (*m)[route]; p != nil {
		return p, nil
	}
	if p := t.overflow.Load(); p != nil {
		return p, nil // set once the table is full
	}
	return t.add(route)
}

func (t *routePools) add(route string) (*routePool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return nil, permits.ErrClosed
	}
	old := *t.m.Load()
	if p, ok := old[route]; ok {
		return p, nil
	}
	if p := t.overflow.Load(); p != nil {
		return p, nil
	}
	full := len(old) >= t.max
	name := route
	if full {
		name = OverflowRoute
	}
	pool, err := actor.NewAdaptivePool(t.newCtl(), append(t.opts[:len(t.opts):len(t.opts)], actor.WithName("httplimit "+name))...)
	if err != nil {
		return nil, err // validated: a controller the constructor made wrong this time
	}
	p := &routePool{name: name, pool: pool}
	if full {
		t.overflow.Store(p)
		return p, nil
	}
	m := maps.Clone(old)
	m[route] = p
	t.m.Store(&m)
	return p, nil
}

// lookup returns the pool named route, nil if there is none.
func (t *routePools) lookup(route string) *routePool {
	if p := (*t.m.Load())[route]; p != nil || route != OverflowRoute {
		return p
	}
	return t.overflow.Load()
}

func (t *routePools) len() int {
	return len(*t.m.Load())
}

func (t *routePools) close() {
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

// observe adds one handler's time to the route's average.
func (p *routePool) observe(d time.Duration) {
	old := p.latency.Load()
	if old == 0 {
		p.latency.Store(int64(d))
		return
	}
	p.latency.Store(old + (int64(d)-old)/8)
}

// retryAfter is the wait a shed request is told: the route's average
// handler time. A slot frees when a request in flight ends, which is
// about one handler time away; sooner the client would meet a full route
// again. Retry-After rounds it up to whole seconds, at least 1.
func (p *routePool) retryAfter() time.Duration { return time.Duration(p.latency.Load()) }
