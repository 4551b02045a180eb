package budget

import (
	"log/slog"
	"math"
	"math/bits"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/internal/window"
)

// ErrInvalidConfig is permits.ErrInvalidConfig, the one error that every
// configuration error of sluice matches.
//
// Deprecated: match permits.ErrInvalidConfig, the same error.
var ErrInvalidConfig = configerr.ErrInvalid

// Defaults and limits of the options.
const (
	DefaultTTL              = 10 * time.Second
	DefaultMinRetriesPerSec = 10
	DefaultPercentCanRetry  = 0.2

	MinTTL              = time.Second
	MaxTTL              = 60 * time.Second
	MaxMinRetriesPerSec = 100_000_000
	// MaxPercentCanRetry is Finagle's bound: up to 1000 retries per request.
	MaxPercentCanRetry = 1000.0
)

// nano is the fixed-point scale: the budget counts in billionths of a retry,
// so a percentage is kept to nine decimal places and 0.2 is exact.
const nano = 1_000_000_000

// Indexes of the window's counters.
const (
	deposits    = 0
	withdrawals = 1
	refusals    = 2
)

// RetryBudget allows retries as a share of recent requests, the way
// Finagle's RetryBudget does
// (https://twitter.github.io/finagle/guide/Clients.html#retries): Deposit for
// every request, TryWithdraw before every retry, and the retry goes ahead
// only when TryWithdraw reports true. See the package documentation for the
// arithmetic and the bucket edge; Stats tells what it has counted.
//
// The zero value is not usable: make one with New. A RetryBudget is safe for
// concurrent use. Each call holds a mutex for a fixed amount of work (at most
// ten bucket resets, no allocation) and never while running user code; the
// budget takes 384 bytes whatever the traffic. Most of a call's cost is its
// monotonic clock read (figures in docs/resilience.md).
type RetryBudget struct {
	mu  sync.Mutex
	win window.Window // guarded by mu

	// reserve is minRetriesPerSec·ttl and percent is percentCanRetry, both
	// in billionths of a retry.
	reserve uint64
	percent uint64

	name      string
	logger    *slog.Logger     // WithLogger (log.go); nil: no lines
	exhausted bool             // guarded by mu: the last state the log told of
	origin    time.Time        // the creation instant; buckets are aligned to it
	clock     func() time.Time // nil means package time
}

// Option configures a RetryBudget. Of two options setting the same thing,
// the last one given wins.
type Option interface{ apply(*config) }

type config struct {
	ttl     time.Duration
	min     int
	percent float64
	name    string
	logger  *slog.Logger
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithTTL sets how long deposits and withdrawals count: between 0.9·d and d
// after they are made (the bucket edge). It must be between 1s and 60s; the
// default is 10s.
func WithTTL(d time.Duration) Option { return optionFunc(func(c *config) { c.ttl = d }) }

// WithMinRetriesPerSec sets the reserve: n·ttlSeconds retries per window are
// allowed even without deposits, so that a low-traffic client can still
// retry. It must be between 0 and 100 million; the default is 10. The reserve
// is not a floor: withdrawals count against it like against deposits, so a
// burst of retries can drive the balance below it, and below zero while old
// deposits leave the window before the withdrawals they paid for.
func WithMinRetriesPerSec(n int) Option { return optionFunc(func(c *config) { c.min = n }) }

// WithPercentCanRetry sets the share of deposits that may be retried, as a
// fraction of requests: 0.2 allows one retry per five requests, 1 one retry
// per request, 1000 (the most, as in Finagle) a thousand. It must be between
// 0 and 1000 and is kept to nine decimal places; the default is 0.2. With a
// reserve of zero and a percentage of zero no retry is ever allowed.
func WithPercentCanRetry(p float64) Option { return optionFunc(func(c *config) { c.percent = p }) }

// WithName names the budget in Stats and in the errors of the code that uses
// it (package retry's refusals). The default is no name.
func WithName(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

// New returns a budget configured by opts, with its buckets aligned to the
// current instant. It fails, matching ErrInvalidConfig, for a nil option or
// a setting outside its documented range.
func New(opts ...Option) (*RetryBudget, error) { return newBudget(nil, opts) }

func newBudget(clock func() time.Time, opts []Option) (*RetryBudget, error) {
	c := config{ttl: DefaultTTL, min: DefaultMinRetriesPerSec, percent: DefaultPercentCanRetry}
	for i, o := range opts {
		if o == nil {
			return nil, invalid("option %d of %d is nil", i+1, len(opts))
		}
		o.apply(&c)
	}
	if c.ttl < MinTTL || c.ttl > MaxTTL {
		return nil, invalid("ttl must be between %v and %v, got %v", MinTTL, MaxTTL, c.ttl)
	}
	if c.min < 0 || c.min > MaxMinRetriesPerSec {
		return nil, invalid("min retries per second must be between 0 and %d, got %d", MaxMinRetriesPerSec, c.min)
	}
	if !(c.percent >= 0 && c.percent <= MaxPercentCanRetry) { // also rejects NaN
		return nil, invalid("percent can retry must be between 0 and %v, got %v", MaxPercentCanRetry, c.percent)
	}
	b := &RetryBudget{
		reserve: uint64(c.min) * uint64(c.ttl),
		percent: uint64(math.Round(c.percent * nano)),
		name:    c.name,
		logger:  c.logger,
		clock:   clock,
		win:     window.New(c.ttl),
	}
	if clock != nil {
		b.origin = clock()
	} else {
		b.origin = time.Now()
	}
	return b, nil
}

// Name returns the name given with WithName, or "".
func (b *RetryBudget) Name() string { return b.name }

// Deposit records a request. Call it once for every request (its first
// attempt); retries withdraw instead.
func (b *RetryBudget) Deposit() {
	b.mu.Lock()
	b.win.Add(b.elapsed(), window.Counts{deposits: 1})
	b.mu.Unlock()
}

// TryWithdraw reports whether a retry may go ahead and, if so, records it as
// a withdrawal; if not, it records a refusal (see Stats). It never blocks.
func (b *RetryBudget) TryWithdraw() bool {
	b.mu.Lock()
	now := b.elapsed()
	t := b.win.Totals(now)
	balance := b.balance(t)
	ok := balance >= 1
	if ok {
		b.win.Add(now, window.Counts{withdrawals: 1})
	} else {
		b.win.Add(now, window.Counts{refusals: 1})
	}
	changed := b.changed(ok)
	b.mu.Unlock()
	if changed {
		b.logChange(b.origin.Add(now), ok, balance, t)
	}
	return ok
}

// Balance returns the number of retries TryWithdraw would allow now if
// nothing else happened: floor(minRetriesPerSec·ttlSeconds +
// percentCanRetry·deposits) − withdrawals over the events still counting. It
// can be negative for a while when old deposits leave the window before the
// withdrawals they paid for.
func (b *RetryBudget) Balance() int64 {
	b.mu.Lock()
	n := b.balance(b.win.Totals(b.elapsed()))
	b.mu.Unlock()
	return n
}

// Stats is what a budget has counted, as Stats returns it.
type Stats struct {
	Name    string // as given with WithName
	Balance int64  // what Balance returns
	// The deposits, withdrawals (TryWithdraw that returned true) and
	// refusals (TryWithdraw that returned false) still counting: made
	// between 0.9·ttl and ttl ago or later.
	Deposits, Withdrawals, Refusals int64
}

// Stats returns the balance and the counts of the window, read together
// under the budget's lock so that they agree with each other.
func (b *RetryBudget) Stats() Stats {
	b.mu.Lock()
	t := b.win.Totals(b.elapsed())
	s := Stats{Name: b.name, Balance: b.balance(t), Deposits: t[deposits], Withdrawals: t[withdrawals], Refusals: t[refusals]}
	b.mu.Unlock()
	return s
}

// balance computes the balance for window totals t exactly, in 128 bits.
func (b *RetryBudget) balance(t window.Counts) int64 {
	hi, lo := bits.Mul64(b.percent, uint64(t[deposits]))
	lo, carry := bits.Add64(lo, b.reserve, 0)
	hi += carry
	var whole uint64 = math.MaxInt64 / 2 // saturate: more than anyone can withdraw
	if hi < nano {
		whole, _ = bits.Div64(hi, lo, nano)
		whole = min(whole, math.MaxInt64/2)
	}
	return int64(whole) - t[withdrawals]
}

// elapsed returns the time since the budget was made. time.Since reads only
// the monotonic clock, about half the cost of time.Now, and follows the
// virtual clock inside a testing/synctest bubble.
func (b *RetryBudget) elapsed() time.Duration {
	if b.clock != nil {
		return b.clock().Sub(b.origin)
	}
	return time.Since(b.origin)
}

func invalid(format string, args ...any) error {
	return configerr.Errorf("budget", format, args...)
}
