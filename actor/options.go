package actor

import (
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/permits"
)

// Option configures a Limiter.
type Option interface{ apply(*config) }

type config struct {
	name     string
	clock    Clock
	maxWait  time.Duration    // < 0: no limit
	maxQueue int              // <= 0: no limit
	obs      permits.Observer // nil: none
	logger   *slog.Logger     // WithLogger (log.go); nil: no lines
}

func defaults() config {
	return config{name: "unnamed", clock: systemClock{}, maxWait: -1}
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// CommonOption is an option of a Limiter and of a Pool alike: one name for
// one concept, whichever the constructor.
type CommonOption struct{ f func(*config) }

func (o CommonOption) apply(c *config)     { o.f(c) }
func (o CommonOption) applyPool(c *config) { o.f(c) }

// WithMaxWait makes Acquire fail at once with *permits.RateLimitError when
// its predicted wait is longer than d, instead of queuing. d = 0 means
// Acquire never waits; a negative d removes the limit (the default).
func WithMaxWait(d time.Duration) Option {
	return optionFunc(func(c *config) { c.maxWait = d })
}

// WithMaxQueue bounds the number of waiters. A request that would make the
// queue longer fails at once, instead of growing the queue without bound:
// from a Limiter with *permits.RateLimitError whose RetryAfter is its
// predicted wait, from a Pool with an error matching permits.ErrRateLimited
// and no RetryAfter (a pool cannot tell when capacity comes back). n <= 0
// removes the limit (the default).
func WithMaxQueue(n int) CommonOption {
	return CommonOption{func(c *config) { c.maxQueue = n }}
}

// WithClock replaces package time, for simulations that drive time
// themselves. Tests should prefer testing/synctest with the default clock.
func WithClock(clock Clock) Option {
	return optionFunc(func(c *config) {
		if clock != nil {
			c.clock = clock
		}
	})
}

// WithName names the limiter or pool: its owner goroutine runs under the
// pprof label sluice.limiter=name (sluice.pool=name for a Pool), so that a
// goroutine dump of one that was never closed says which one it is. The
// default name is "unnamed".
func WithName(name string) CommonOption {
	return CommonOption{func(c *config) { c.name = name }}
}

// WithObserver makes each granted Acquire of the limiter or pool (and of
// its lanes) tell o how long it waited, 0 for one granted at once, on the
// caller's goroutine as it returns (permits.Observer;
// docs/observability.md). TryAcquire and Allow never wait and are not
// reported. Without it (or with nil) nothing is called.
func WithObserver(o permits.Observer) CommonOption {
	return CommonOption{func(c *config) { c.obs = o }}
}
