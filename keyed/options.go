package keyed

import (
	"log/slog"
	"runtime"
	"time"

	"github.com/sluicehq/sluice/permits"
)

// Option configures a Limiter. Options are values; a nil Option is ignored.
type Option interface{ apply(*config) }

type config struct {
	name     string
	clock    Clock
	shards   int
	maxKeys  int
	maxWait  time.Duration    // < 0: no limit
	maxQueue int              // <= 0: no limit
	idle     time.Duration    // how long a key stays full before it is dropped
	obs      permits.Observer // nil: none
	logger   *slog.Logger     // WithLogger (log.go); nil: no lines
	retired  func(e any)      // tests only (export_test.go): called right after the owner retires a cell
	detached func(e any)      // tests only: called right after the owner detaches a cell, before the key's flags change
	closed   func()           // tests only: called right after an Acquire closes its slot's gate without a lock, before any lock
}

func defaults() config {
	return config{name: "unnamed", clock: systemClock{}, maxWait: -1}
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithShards sets the number of owners (goroutines), rounded up to a power
// of two, at most 4096; 0 means the default, four per GOMAXPROCS.
func WithShards(n int) Option { return optionFunc(func(c *config) { c.shards = n }) }

// WithMaxKeys caps the keys tracked at once: a request for a key that is
// not live while n keys are fails at once with an error matching
// ErrTooManyKeys. n = 0 (the default) means no cap; n < 0 is invalid.
func WithMaxKeys(n int) Option { return optionFunc(func(c *config) { c.maxKeys = n }) }

// WithMaxWait makes Acquire fail at once with *permits.RateLimitError when
// its predicted wait for its key is longer than d, instead of queuing. d = 0
// means Acquire never waits; a negative d removes the limit (the default).
func WithMaxWait(d time.Duration) Option { return optionFunc(func(c *config) { c.maxWait = d }) }

// WithMaxQueue bounds the waiters of each key: a request that would make a
// key's queue longer fails at once with *permits.RateLimitError whose
// RetryAfter is its predicted wait. n <= 0 removes the limit (the default).
func WithMaxQueue(n int) Option { return optionFunc(func(c *config) { c.maxQueue = n }) }

// WithIdleTimeout keeps a key whose state is full again for about d more
// before it is dropped: a pass of the owner drops a key full since d ago
// (0, the default: full at the pass; a pass comes at the instant for a
// small table, within about 2µs per slot of the table for a large one). A
// client whose requests come further apart than its state takes to refill
// makes a new key for each of them (its constructor's algorithm, and a
// 16-byte slot for a cell key); a timeout of a second or so keeps such
// keys for a little more memory. A cell key remembers since when it has
// been full no further back than its shard's cells count (half a
// generation's range at least: about a second at the finest rates, days or
// decades at common ones), and counts as idle for any d once full since
// before that. A negative d is invalid.
func WithIdleTimeout(d time.Duration) Option { return optionFunc(func(c *config) { c.idle = d }) }

// WithClock replaces package time, for simulations that drive time
// themselves. Tests should prefer testing/synctest with the default clock.
// A nil clock is ignored.
func WithClock(clock Clock) Option {
	return optionFunc(func(c *config) {
		if clock != nil {
			c.clock = clock
		}
	})
}

// WithName names the limiter: its owners run under the pprof labels
// sluice.limiter=name and sluice.shard=i, so that a goroutine dump of a
// limiter that was never closed says which one it is.
func WithName(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

const maxShards = 4096

// validate checks c and settles the number of shards.
func (c *config) validate() error {
	switch {
	case c.shards < 0 || c.shards > maxShards:
		return invalid("shards must be between 1 and %d, got %d", maxShards, c.shards)
	case c.maxKeys < 0:
		return invalid("max keys must be 0 (no cap) or positive, got %d", c.maxKeys)
	case c.idle < 0:
		return invalid("idle timeout must not be negative, got %v", c.idle)
	}
	if c.shards == 0 {
		c.shards = 4 * runtime.GOMAXPROCS(0)
	}
	n := 1
	for n < c.shards {
		n <<= 1
	}
	c.shards = min(n, maxShards)
	return nil
}

// WithObserver makes each granted Acquire tell o how long it waited, from
// its arrival to the instant it was granted at (0 for one granted at
// once), on the caller's goroutine as it returns (permits.Observer;
// docs/observability.md). TryAcquire never waits and is not reported.
// Without it (or with nil) nothing is called.
func WithObserver(o permits.Observer) Option {
	return optionFunc(func(c *config) { c.obs = o })
}
