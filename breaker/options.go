package breaker

import (
	"log/slog"
	"math"
	"time"

	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/internal/window"
)

// Defaults.
const (
	DefaultConsecutiveFailures = 5
	DefaultOpenTimeout         = 30 * time.Second
	DefaultHalfOpenProbes      = 1
	// DefaultHalfOpenTimeout is the least half-open timeout a breaker gets
	// unless WithHalfOpenTimeout says otherwise: the default is the open
	// timeout or this, whichever is longer.
	DefaultHalfOpenTimeout = time.Minute
	// MaxOpenTimeoutGrowth is the largest factor WithOpenTimeoutGrowth
	// takes.
	MaxOpenTimeoutGrowth = 100.0
)

// Option configures a Breaker. Of two options setting the same thing, the
// last one given wins; New checks the settings only once all options are
// applied, so an invalid setting that a later option replaces is no error.
type Option interface{ apply(*config) }

type config struct {
	name            string
	rateMode        bool
	consecutive     int
	rate            float64
	window          time.Duration
	minCalls        int
	openTimeout     time.Duration
	growth          float64       // 1: the open timeout does not grow
	maxOpenTimeout  time.Duration // the cap of the growth
	halfOpenTimeout time.Duration
	halfOpenSet     bool // false: halfOpenTimeout is derived from openTimeout
	probes          int
	classify        func(error) Outcome
	slow            time.Duration // 0: no slow-call threshold
	onTransition    func(Transition)
	logger          *slog.Logger     // WithLogger; nil: no lines
	deliver         func(Transition) // the log line and the hook; nil: neither (delivery)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithName names the breaker in its errors (*OpenError), its Snapshot and
// the transitions its hook receives. The default is no name.
func WithName(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

// WithConsecutiveFailures selects count mode, the default: the breaker opens
// after n consecutive failures (n >= 1; default 5). A success resets the
// count; an ignored outcome leaves it as it is. Of WithConsecutiveFailures
// and WithFailureRate, the last one given wins.
func WithConsecutiveFailures(n int) Option {
	return optionFunc(func(c *config) { c.rateMode, c.consecutive = false, n })
}

// WithFailureRate selects rate mode: the breaker opens when, among the
// outcomes recorded in the last window (give or take a tenth: see the
// package documentation), there are at least minCalls and the share of
// failures is at least rate. rate must be in (0, 1], minCalls at least 1,
// and window between 10ns and about 18 years. Ignored outcomes are not
// calls. Of WithConsecutiveFailures and WithFailureRate, the last one given
// wins.
func WithFailureRate(rate float64, window time.Duration, minCalls int) Option {
	return optionFunc(func(c *config) {
		c.rateMode, c.rate, c.window, c.minCalls = true, rate, window, minCalls
	})
}

// WithOpenTimeout sets how long the breaker stays open before it admits a
// probe (d > 0; default 30s).
func WithOpenTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.openTimeout = d })
}

// WithOpenTimeoutGrowth makes the open timeout grow while the downstream
// stays down: every time the breaker reopens from half-open (a probe failed,
// or the half-open timeout passed) the next open spell lasts factor times
// the last one, up to max; closing, and Reset, bring it back to the open
// timeout. factor must be between 1 and 100 (1: no growth, the default) and
// max at least the open timeout.
func WithOpenTimeoutGrowth(factor float64, max time.Duration) Option {
	return optionFunc(func(c *config) { c.growth, c.maxOpenTimeout = factor, max })
}

// WithHalfOpenProbes sets how many calls may run at once while half-open,
// and how many of them must succeed to close the breaker (n >= 1; default
// 1).
func WithHalfOpenProbes(n int) Option {
	return optionFunc(func(c *config) { c.probes = n })
}

// WithHalfOpenTimeout bounds how long probes may hold every slot: once they
// have held them all for d, the next call (or State, or Snapshot) reopens the
// breaker with a fresh open timeout, and the probes still in flight become
// stale, so that a probe that never reports (a done lost with its goroutine,
// an fn that ignores its context) cannot wedge the breaker half-open. The
// clock starts when the last free slot is taken. d must be > 0; the default,
// which no one needs to set, is the open timeout or DefaultHalfOpenTimeout (1
// minute), whichever is longer. Make it longer than the slowest call a probe
// may legitimately make: a probe still running at the timeout cannot close
// the breaker.
func WithHalfOpenTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.halfOpenTimeout, c.halfOpenSet = d, true })
}

// WithClassifier sets how a call's error counts: Success, Failure or
// Ignored (for a 429 from a quota, or the caller's own cancellation, which
// say nothing about the downstream's health). It is called, without any lock
// held, for every non-nil error a call returns; nil is always a Success. It
// must not be nil. The default is DefaultClassifier. A panic in it counts the
// call as a Failure and goes on up to the caller. Of WithClassifier and
// WithIsFailure, the last one given wins.
func WithClassifier(f func(err error) Outcome) Option {
	return optionFunc(func(c *config) { c.classify = f })
}

// WithIsFailure sets which errors count as failures: the two-outcome form of
// WithClassifier. An error it claims is a Failure; an error it rejects is a
// Success, except context.Canceled (and errors wrapping it), which is
// Ignored. It must not be nil. Of WithClassifier and WithIsFailure, the last
// one given wins.
func WithIsFailure(f func(error) bool) Option {
	return optionFunc(func(c *config) {
		c.classify = nil // invalid unless f is set
		if f != nil {
			c.classify = isFailureClassifier(f)
		}
	})
}

// WithSlowCallThreshold makes a call that takes longer than d a Failure even
// when it succeeded, as resilience4j's slowCallDurationThreshold does, in
// both modes: it counts towards the consecutive failures, or as a failure in
// the rate window. d must not be negative; the default is no threshold. A call is
// timed from admission to its outcome (Do: fn's run; Allow: until done),
// which costs two monotonic clock reads per call. An Ignored outcome stays
// Ignored however long it took; a slow failure is one failure. d = 0 removes
// the threshold.
func WithSlowCallThreshold(d time.Duration) Option {
	return optionFunc(func(c *config) { c.slow = d })
}

// WithOnTransition sets a hook called for every transition, in the order
// the transitions happened, with no lock held: it may call any method of
// the Breaker, including Do, without deadlocking. One goroutine at a time
// delivers transitions, so the hook never runs concurrently with itself and
// deliveries are never reordered.
//
// A transition made while the hook runs, by any goroutine or by the hook
// itself, is delivered as soon as the hook returns: the call that is running
// the hook goes on until no transition is queued, so when the last call
// returns nothing is left pending, even if no call ever comes again (a panic,
// below, is the exception).
//
// Delivery is bounded. Transitions wait for the hook in a queue of four: when
// a fifth comes before the hook took the first, the oldest is dropped and
// counted in the Dropped field of the next one delivered, so that a storm of
// transitions (a tiny open timeout, a slow hook) costs constant memory and
// the hook sees the latest transitions. Nor does a storm hold one caller:
// before its third hook call, the delivering call offers the queue to the
// other calls for as long as its last hook call took, and the first to come
// takes the delivery over. If none comes, it delivers the rest itself. A
// hook that makes a transition every time it runs is the one case where
// something waits for the next call: after an offer nobody took, a call makes
// at most eight more hook calls. So one call makes at most ten hook calls
// and waits at most once, for one hook call's time, at each of its deliveries
// (a Do delivers before fn, for the transition that admitted it, and after).
//
// A panic in the hook propagates to the call that was delivering; the call
// itself is accounted for first (a probe that had not started frees its
// slot), and what is still queued is delivered by the next call. When fn panics, no hook runs on the way up, so that the panic the
// caller recovers is fn's; its transitions are delivered by the next call.
// nil means no hook. Of WithOnTransition and WithOnStateChange, the last one
// given wins.
func WithOnTransition(f func(Transition)) Option {
	return optionFunc(func(c *config) { c.onTransition = f })
}

// WithOnStateChange sets a hook called with the states of every transition:
// WithOnTransition without the name, the instant and the count of
// transitions dropped. Everything WithOnTransition says holds, so a storm of
// transitions shows as a gap: a from that is not the last to. nil means no
// hook.
func WithOnStateChange(f func(from, to State)) Option {
	return optionFunc(func(c *config) {
		c.onTransition = nil
		if f != nil {
			c.onTransition = func(t Transition) { f(t.From, t.To) }
		}
	})
}

const (
	minWindow = window.MinWidth
	maxWindow = window.MaxWidth
)

// newConfig applies opts to the defaults and checks the result.
func newConfig(opts []Option) (config, error) {
	c := config{
		consecutive: DefaultConsecutiveFailures,
		openTimeout: DefaultOpenTimeout,
		growth:      1,
		probes:      DefaultHalfOpenProbes,
		classify:    DefaultClassifier,
	}
	for i, o := range opts {
		if o == nil {
			return config{}, invalid("option %d of %d is nil", i+1, len(opts))
		}
		o.apply(&c)
	}
	if err := c.check(); err != nil {
		return config{}, err
	}
	if !c.halfOpenSet {
		c.halfOpenTimeout = max(c.openTimeout, DefaultHalfOpenTimeout)
	}
	if c.growth == 1 {
		c.maxOpenTimeout = c.openTimeout
	}
	c.deliver = c.delivery()
	return c, nil
}

// check returns an error matching ErrInvalidConfig for the first setting
// outside its documented range.
func (c *config) check() error {
	switch {
	case !c.rateMode && c.consecutive < 1:
		return invalid("consecutive failures must be at least 1, got %d", c.consecutive)
	case c.rateMode && !(c.rate > 0 && c.rate <= 1):
		return invalid("failure rate must be in (0, 1], got %v", c.rate)
	case c.rateMode && (c.window < minWindow || c.window > maxWindow):
		return invalid("failure rate window must be between %v and %v, got %v", minWindow, maxWindow, c.window)
	case c.rateMode && c.minCalls < 1:
		return invalid("failure rate minimum calls must be at least 1, got %d", c.minCalls)
	case c.openTimeout <= 0:
		return invalid("open timeout must be positive, got %v", c.openTimeout)
	case !(c.growth >= 1 && c.growth <= MaxOpenTimeoutGrowth):
		return invalid("open timeout growth must be between 1 and %v, got %v", MaxOpenTimeoutGrowth, c.growth)
	case c.growth > 1 && c.maxOpenTimeout < c.openTimeout:
		return invalid("the most the open timeout may grow to (%v) is less than the open timeout (%v)", c.maxOpenTimeout, c.openTimeout)
	case c.halfOpenSet && c.halfOpenTimeout <= 0:
		return invalid("half-open timeout must be positive, got %v", c.halfOpenTimeout)
	case c.probes < 1:
		return invalid("half-open probes must be at least 1, got %d", c.probes)
	case c.classify == nil:
		return invalid("the classifier (WithClassifier, WithIsFailure) must not be nil")
	case c.slow < 0:
		return invalid("slow-call threshold must not be negative, got %v", c.slow)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return configerr.Errorf("breaker", format, args...)
}

// grow returns the open timeout that follows d when the breaker reopens
// from half-open: d·growth, capped at the maximum.
func (c *config) grow(d time.Duration) time.Duration {
	next := float64(d) * c.growth
	if next >= float64(c.maxOpenTimeout) || next >= math.MaxInt64 {
		return c.maxOpenTimeout
	}
	return time.Duration(next)
}
