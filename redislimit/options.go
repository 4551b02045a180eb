package redislimit

import (
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

// Option configures a Limiter or a Keyed.
type Option interface{ apply(*config) }

type config struct {
	clock       actor.Clock
	callTimeout time.Duration
	maxWait     time.Duration // < 0: no limit
	maxBatch    int
	probe       time.Duration // after a failed call, fail at once this long; <= 0: never
	open        bool          // WithFailOpen was given: fail open to openNum/openDen of the rate
	openNum     int64
	openDen     int64
	obs         permits.Observer        // nil: none
	logger      *slog.Logger            // nil: none (WithLogger)
	serverNow   func() int64            // tests: the instant, in µs, the script decides at
	beforeCall  func()                  // tests: called by the caller goroutine before each batch
	onGrant     func(redis, cost int64) // tests: told of each grant, with Redis's instant in µs
	beforeGrant func(cost int64)        // tests: called just before a due waiter is answered
}

func defaults() config {
	return config{clock: nil, callTimeout: time.Second, maxWait: -1, maxBatch: 256, probe: 250 * time.Millisecond}
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithCallTimeout bounds each script call, and with it every request's
// wait for Redis, whatever the caller's context (TryAcquire and
// Acquire(context.Background()) included). A call that has not answered by
// then fails its requests with an *UnavailableError (fail-closed) whose
// Cause is a *TimeoutError; its outcome is unknown, so its costs count as
// consumed and nothing is sent again on its behalf. While such a call is
// still inside go-redis (a hung server: go-redis waits its ReadTimeout,
// 3 s by default, and the call's deadline stops its retries), no other
// call is made: requests fail at once, and the
// next call goes once it is back. The default is one second; d <= 0 keeps
// it. go-redis's own retries happen inside the call: with its defaults a
// refused connection takes it about 1.7 s to report, so a down server
// fails as a timeout unless the client has fewer retries (MaxRetries: -1,
// DialerRetries: 1) or d is longer.
//
// go-redis ends a call at its context's deadline only with
// ContextTimeoutEnabled. With such a client a lone caller makes its script
// call on its own goroutine; with any other, a worker goroutine makes it
// and the caller waits for it or for the timeout, which costs a lone caller
// a goroutine hand-off per call (docs/benchmarks.md).
func WithCallTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.callTimeout = d
		}
	})
}

// WithMaxWait makes Acquire fail at once with *permits.RateLimitError when
// Redis would reserve its cost further than d ahead, instead of waiting.
// d = 0 means Acquire never waits; a negative d removes the limit (the
// default).
func WithMaxWait(d time.Duration) Option {
	return optionFunc(func(c *config) { c.maxWait = d })
}

// WithMaxBatch bounds the requests of one key that one script call
// decides (default 256), so that no call holds Redis for long. n < 1 keeps
// the default.
func WithMaxBatch(n int) Option {
	return optionFunc(func(c *config) {
		if n >= 1 {
			c.maxBatch = n
		}
	})
}

// WithProbeInterval sets how long, after a call fails for want of Redis
// (a refused connection, a timeout, a dropped connection), requests fail
// at once (or fall open) without a call, before the next call tries Redis
// again: while Redis is down, callers do not each wait out a dial and its
// retries. The default is 250ms; d <= 0 makes every batch try.
func WithProbeInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.probe = d })
}

// WithFailOpen makes the limiter fall back, for each request Redis cannot
// decide, to a limiter in this process that admits num/den of the rate and
// of the burst (at least 1): with N processes sharing a quota, 1/N each
// keeps them within it while Redis is down. A cost above the share's
// burst fails with the *UnavailableError, since Redis could admit it. The
// default is fail-closed: such requests fail with an error matching
// ErrUnavailable. num and den must satisfy 0 < num <= den, or the
// constructor fails.
func WithFailOpen(num, den int64) Option {
	return optionFunc(func(c *config) { c.open, c.openNum, c.openDen = true, num, den })
}

// WithClock replaces package time for the owner's timer and the local
// instants of grants, for simulations that drive time themselves. Tests
// should prefer testing/synctest with the default clock. A nil clock is
// ignored.
func WithClock(clock actor.Clock) Option {
	return optionFunc(func(c *config) {
		if clock != nil {
			c.clock = clock
		}
	})
}

// WithObserver makes each granted Acquire tell o how long its caller
// waited for it, from the call to its return, the round trip to Redis
// included (permits.Observer; docs/observability.md). TryAcquire is not
// reported. Without it (or with nil) nothing is called.
func WithObserver(o permits.Observer) Option {
	return optionFunc(func(c *config) { c.obs = o })
}
