package actor

import "time"

// Option configures a Limiter.
type Option interface{ apply(*config) }

type config struct {
	name     string
	clock    Clock
	maxWait  time.Duration // < 0: no limit
	maxQueue int           // <= 0: no limit
}

func defaults() config {
	return config{name: "unnamed", clock: systemClock{}, maxWait: -1}
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMaxWait makes Acquire fail at once with *permits.RateLimitError when
// its predicted wait is longer than d, instead of queuing. d = 0 means
// Acquire never waits; a negative d removes the limit (the default).
func WithMaxWait(d time.Duration) Option {
	return optionFunc(func(c *config) { c.maxWait = d })
}

// WithMaxQueue bounds the number of waiters. A request that would make the
// queue longer fails at once with *permits.RateLimitError whose RetryAfter is
// its predicted wait, instead of growing the queue without bound. n <= 0
// removes the limit (the default).
func WithMaxQueue(n int) Option {
	return optionFunc(func(c *config) { c.maxQueue = n })
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

// WithName names the limiter: its owner goroutine runs under the pprof
// label sluice.limiter=name, so that a goroutine dump of a limiter that was
// never closed says which one it is. The default name is "unnamed".
func WithName(name string) Option {
	return optionFunc(func(c *config) { c.name = name })
}
