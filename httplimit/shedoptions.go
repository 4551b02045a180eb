package httplimit

import (
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/pooltable"
)

// DefaultMaxRoutes is how many routes a Shedder gives a pool of their own
// unless WithMaxRoutes says otherwise: more than most ServeMuxes have
// patterns, few enough that a table of pools (a goroutine and about 2 KiB
// each) stays small.
const DefaultMaxRoutes = 64

// OverflowRoute is the name of the pool the routes past WithMaxRoutes
// share, for RouteConcurrency.
const OverflowRoute = pooltable.Overflow

// ShedOption configures NewShedder. Options are values; a nil one is
// ignored.
type ShedOption interface{ applyShed(*shedConfig) }

type shedConfig struct {
	pool      []actor.AdaptiveOption
	maxRoutes int
	wait      bool
	maxWait   time.Duration
}

type shedOptionFunc func(*shedConfig)

func (f shedOptionFunc) applyShed(c *shedConfig) { f(c) }

// WithPoolOptions sets the options of every route's pool: actor.WithLimits
// (the default is 1, 20, 1000), actor.WithMaxQueue for WithShedWait. The
// Shedder names each pool after its route.
func WithPoolOptions(opts ...actor.AdaptiveOption) ShedOption {
	return shedOptionFunc(func(c *shedConfig) { c.pool = append(c.pool, opts...) })
}

// WithMaxRoutes bounds the routes that get a pool of their own (n ≥ 1;
// DefaultMaxRoutes); the routes seen after the table is full share one
// more, OverflowRoute's.
func WithMaxRoutes(n int) ShedOption {
	return shedOptionFunc(func(c *shedConfig) { c.maxRoutes = n })
}

// WithShedWait makes a request that finds its route full wait for a slot,
// in FIFO order, for at most max (negative: as long as its context lasts;
// 0: never) instead of being shed at once, as Middleware's WithWait does
// for a quota. A request whose wait runs out is shed; one whose client
// goes away while it waits leaves the queue and gets no response. Waiting
// trades latency for fewer 503s: keep max well under your clients'
// timeouts.
func WithShedWait(max time.Duration) ShedOption {
	return shedOptionFunc(func(c *shedConfig) { c.wait, c.maxWait = true, max })
}

// WithShedder passes the requests Middleware grants (and, in shadow mode,
// those it would refuse) through s before the handler: the rate limit
// first, then the route's concurrency slot, so that a client over its
// quota never holds a slot. A shed request goes to WithErrorHandler's
// handler with an error matching ErrOverloaded (503 by default), its
// Retry-After already set. Exempt requests skip both. Closing s is the
// caller's.
func WithShedder(s *Shedder) Option {
	return optionFunc(func(c *config) { c.shedder = s })
}
