package httplimit

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

// routePools is a Shedder's table of pools, one per route, made at the
// route's first request, at most max of them plus the overflow pool.
// Reads take the read lock: after the first requests of each route the
// table only grows when a new route comes, which a ServeMux's fixed set of
// patterns makes rare.
type routePools struct {
	newCtl   func() actor.Controller
	opts     []actor.AdaptiveOption
	max      int
	mu       sync.RWMutex
	m        map[string]*routePool
	overflow *routePool
	closed   bool
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
	return &routePools{newCtl: newCtl, opts: opts, max: max, m: map[string]*routePool{}}
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
	t.mu.RLock()
	p, closed := t.m[route], t.closed
	t.mu.RUnlock()
	switch {
	case closed:
		return nil, permits.ErrClosed
	case p != nil:
		return p, nil
	}
	return t.add(route)
}

func (t *routePools) add(route string) (*routePool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, permits.ErrClosed
	}
	if p, ok := t.m[route]; ok {
		return p, nil
	}
	full := len(t.m) >= t.max
	if full && t.overflow != nil {
		return t.overflow, nil
	}
	name := route
	if full {
		name = OverflowRoute
	}
	pool, err := actor.NewAdaptivePool(t.newCtl(), append(t.opts[:len(t.opts):len(t.opts)], actor.WithName("httplimit "+name))...)
	if err != nil {
		return nil, err // validated: a controller newController made wrong this time
	}
	p := &routePool{name: name, pool: pool}
	if full {
		t.overflow = p
	} else {
		t.m[route] = p
	}
	return p, nil
}

// lookup returns the pool named route, nil if there is none.
func (t *routePools) lookup(route string) *routePool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if route == OverflowRoute && t.m[route] == nil {
		return t.overflow
	}
	return t.m[route]
}

func (t *routePools) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m)
}

func (t *routePools) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for _, p := range t.m {
		_ = p.pool.Close()
	}
	if t.overflow != nil {
		_ = t.overflow.pool.Close()
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
