package retry

import (
	"time"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/internal/configerr"
)

// Defaults.
const (
	DefaultMaxAttempts = 3
	DefaultBaseDelay   = 100 * time.Millisecond
	DefaultMaxDelay    = 10 * time.Second
	DefaultMaxElapsed  = time.Minute
)

// Option configures a Policy, or one Do. Of two options setting the same
// thing, the last one given wins; the settings are checked once all options
// are applied. An Option is immutable: build it once and share it, across
// goroutines too.
type Option interface {
	// setting returns what the option sets. Options are data that build
	// applies to a config on its own stack: a config passed to an
	// interface method would escape to the heap, and one passed by value
	// costs tens of nanoseconds per option.
	setting() *setting
}

// setting is one option: its kind and the values it sets. Immutable once
// made.
type setting struct {
	kind     settingKind
	n        int
	d1, d2   time.Duration
	seed     uint64
	budget   *budget.RetryBudget
	classify func(error) Class
	onRetry  func(Event)
}

type settingKind uint8

const (
	setMaxAttempts settingKind = iota + 1
	setBackoff
	setMaxElapsed
	setBudget
	setClassifier
	setOnRetry
	setJitterSeed
)

func (s *setting) setting() *setting { return s }

type config struct {
	maxAttempts int
	base, cap   time.Duration // back-off: the first ceiling, and the largest
	maxElapsed  time.Duration // 0: only ctx bounds the retrying
	budget      *budget.RetryBudget
	classify    func(error) Class
	onRetry     func(Event)
	seeded      bool
	seed        uint64
}

// WithMaxAttempts sets how many times fn may run in all, the first attempt
// included (n >= 1; 1 means no retry; default 3).
func WithMaxAttempts(n int) Option { return &setting{kind: setMaxAttempts, n: n} }

// WithBackoff sets the exponential back-off with full jitter: the wait
// before retry k (k = 1 after the first attempt) is drawn uniformly from
// [0, min(max, base·2^(k-1))], or longer if the error asks for more (see
// Hint). 0 <= base <= max; the defaults are 100ms and 10s. base = 0 retries
// at once, unless the error asks for a wait.
func WithBackoff(base, max time.Duration) Option {
	return &setting{kind: setBackoff, d1: base, d2: max}
}

// WithMaxElapsed bounds the time Do spends retrying, counted from the end of
// the first attempt (so that a first attempt that succeeds reads no clock):
// no wait ends, and no attempt starts, later than d after it. A retry whose
// wait would end later is not made: Do returns at once with an *Error
// matching ErrOutOfTime. d = 0 leaves only ctx to bound it; the default is a
// minute. An attempt in flight is never interrupted: give fn a ctx with a
// deadline for that.
func WithMaxElapsed(d time.Duration) Option { return &setting{kind: setMaxElapsed, d1: d} }

// WithBudget makes retries spend a retry budget: every Do deposits once,
// before its first attempt, and every retry withdraws before its wait; a
// refused withdrawal ends Do at once with an *Error matching
// ErrBudgetExhausted. A withdrawal is not given back if ctx ends during the
// wait. nil means no budget (the default).
func WithBudget(b *budget.RetryBudget) Option { return &setting{kind: setBudget, budget: b} }

// WithClassifier sets which errors are retried: it is called, in Do's
// goroutine, with every failed attempt's error, and a Permanent one is
// returned at once, as it is. It must not be nil; the default is
// DefaultClassifier. An HTTP client would make 429 and 503 Transient (with a
// RetryAfterer carrying Retry-After), other 4xx Permanent, and a network
// error Transient only for idempotent requests.
func WithClassifier(f func(err error) Class) Option {
	return &setting{kind: setClassifier, classify: f}
}

// Event describes a retry about to happen, as the WithOnRetry hook receives
// it.
type Event struct {
	Attempt int           // the attempt that failed, from 1
	Err     error         // its error, which Do discards
	Wait    time.Duration // how long Do waits before the next attempt
}

// WithOnRetry sets a hook called, in Do's goroutine, after a retry is
// decided (classifier, attempts, time and budget all allow it) and before
// its wait: for logs and metrics, and for releasing what the discarded
// attempt holds (an HTTP response's body). Its time counts towards the wait,
// so a hook that takes less than the wait does not delay the retry. nil
// means none.
func WithOnRetry(f func(Event)) Option { return &setting{kind: setOnRetry, onRetry: f} }

// WithJitterSeed makes the jitter deterministic, for tests: the waits of
// the n-th Do of a Policy (from 0; retry.Do is always the 0th) come from a
// PCG generator seeded with (seed, n). Without it, the jitter comes from
// math/rand/v2's global source. Do not use it in production: Policies built
// with the same seed retry in step.
func WithJitterSeed(seed uint64) Option { return &setting{kind: setJitterSeed, seed: seed} }

func defaults() config {
	return config{
		maxAttempts: DefaultMaxAttempts,
		base:        DefaultBaseDelay,
		cap:         DefaultMaxDelay,
		maxElapsed:  DefaultMaxElapsed,
		classify:    DefaultClassifier,
	}
}

// build applies opts to the defaults and checks the result.
func build(opts []Option) (config, error) {
	c := defaults()
	for i, o := range opts {
		if o == nil {
			return config{}, invalid("option %d of %d is nil", i+1, len(opts))
		}
		c.apply(o.setting())
	}
	switch {
	case c.maxAttempts < 1:
		return config{}, invalid("max attempts must be at least 1, got %d", c.maxAttempts)
	case c.base < 0 || c.cap < c.base:
		return config{}, invalid("back-off needs 0 <= base <= max, got base %v, max %v", c.base, c.cap)
	case c.maxElapsed < 0:
		return config{}, invalid("max elapsed must not be negative, got %v", c.maxElapsed)
	case c.classify == nil:
		return config{}, invalid("the classifier must not be nil")
	}
	return c, nil
}

// apply sets what s says.
func (c *config) apply(s *setting) {
	switch s.kind {
	case setMaxAttempts:
		c.maxAttempts = s.n
	case setBackoff:
		c.base, c.cap = s.d1, s.d2
	case setMaxElapsed:
		c.maxElapsed = s.d1
	case setBudget:
		c.budget = s.budget
	case setClassifier:
		c.classify = s.classify
	case setOnRetry:
		c.onRetry = s.onRetry
	case setJitterSeed:
		c.seeded, c.seed = true, s.seed
	}
}

func invalid(format string, args ...any) error {
	return configerr.Errorf("retry", format, args...)
}
