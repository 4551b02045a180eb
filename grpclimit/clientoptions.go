package grpclimit

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/retry"
)

// ClientOption configures NewClient. Options are values, immutable once
// made; a nil one is ignored. Their names and meanings are those of
// httplimit's TransportOptions.
type ClientOption interface{ applyClient(*clientConfig) }

type clientConfig struct {
	cost           func(ctx context.Context, method string) int64
	retry          []retry.Option
	budget         *budget.RetryBudget
	budgetSet      bool
	breaker        *breaker.Breaker
	maxPause       time.Duration
	pauseLimiter   bool
	codes          []codes.Code
	attemptTimeout time.Duration
	onRetry        func(attempt int, wait time.Duration, err error)
	noJitter       bool // for the tests (export_test.go)
	adaptive       bool // WithAdaptiveConcurrency
	newCtl         func() actor.Controller
	adaptiveOpts   []actor.AdaptiveOption
}

type clientOptionFunc func(*clientConfig)

func (f clientOptionFunc) applyClient(c *clientConfig) { f(c) }

// DefaultMaxPause is the longest pause a refusal can ask of a Client
// unless WithMaxPause says otherwise.
const DefaultMaxPause = time.Minute

// DefaultRetryCodes are the codes a Client retries unless WithRetryCodes
// says otherwise: Unavailable, and ResourceExhausted when it carries
// RetryInfo (without it, ResourceExhausted also means a message too large,
// which no wait cures).
var DefaultRetryCodes = []codes.Code{codes.Unavailable, codes.ResourceExhausted}

// WithRequestCost sets what a call costs, asked of the limiter before it
// is sent (the tokens an LLM call may use, say). The default is the cost
// ContextWithCost put in the call's context, or 1. A cost below 1 fails
// the call with an error matching permits.ErrInvalidCost. nil is ignored.
func WithRequestCost(cost func(ctx context.Context, method string) int64) ClientOption {
	return clientOptionFunc(func(c *clientConfig) {
		if cost != nil {
			c.cost = cost
		}
	})
}

// WithRetry sets the retry loop's options: attempts, back-off, the time
// spent retrying (package retry; its defaults: 3 attempts, 100ms to 10s, a
// minute). The Client sets the classifier, the hook and the budget itself,
// after these. retry.WithMaxAttempts(1) turns retrying off; the pauses
// still happen.
func WithRetry(opts ...retry.Option) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.retry = append(c.retry, opts...) })
}

// WithBudget sets the retry budget the retries spend: every call deposits
// once, every retry withdraws, and a retry the budget refuses is not made
// (the last error is returned). nil means no budget. The default is a
// budget of package budget's defaults of the Client's own.
func WithBudget(b *budget.RetryBudget) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.budget, c.budgetSet = b, true })
}

// WithBreaker passes every attempt through a circuit breaker: an attempt
// it refuses is not sent, and fails at once with codes.Unavailable, the
// breaker's RetryAfter as RetryInfo, matching breaker.ErrOpen. Every
// attempt sent reports its outcome: the server's trouble (Unavailable,
// DeadlineExceeded, Internal, Unknown, DataLoss, ResourceExhausted) as the
// status error, anything else as a success. Give the breaker
// BreakerClassifier so that ResourceExhausted, a quota rather than the
// server's health, does not open it. nil means none.
func WithBreaker(b *breaker.Breaker) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.breaker = b })
}

// WithMaxPause caps the pause any refusal can impose (d > 0; default
// DefaultMaxPause). A refusal that asks for longer pauses the target for d
// only and is not retried: the caller gets it at once.
func WithMaxPause(d time.Duration) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.maxPause = d })
}

// WithRetryCodes sets the codes whose errors are retried (none turns
// retrying off; nil keeps DefaultRetryCodes). ResourceExhausted is retried
// only with RetryInfo. Retried calls may have reached the server (an
// Unavailable after the request was sent): retry only methods that are
// safe to repeat, or give this option the codes that are, for yours.
func WithRetryCodes(cs ...codes.Code) ClientOption {
	return clientOptionFunc(func(c *clientConfig) {
		if cs != nil {
			c.codes = append([]codes.Code{}, cs...)
		}
	})
}

// WithPauseLimiter makes a refusal that asks for a wait pause the whole
// limiter (every part that is a Pauser, such as an actor.Limiter) instead
// of its target alone: for a limiter that is one service's quota, where
// every call waits out the pause in the limiter's FIFO order.
func WithPauseLimiter() ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.pauseLimiter = true })
}

// WithAttemptTimeout bounds each attempt of a unary call (d > 0; 0, the
// default, leaves only the call's deadline): an attempt that times out
// fails with codes.DeadlineExceeded and is retried if DeadlineExceeded is
// among the retry codes (it is not by default).
func WithAttemptTimeout(d time.Duration) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.attemptTimeout = d })
}

// WithOnRetry sets a hook called, in the caller's goroutine, when a retry
// is decided and before its wait: attempt is the attempt that failed (from
// 1), wait the time before the next, err the attempt's error. For logs and
// metrics. nil means none.
func WithOnRetry(f func(attempt int, wait time.Duration, err error)) ClientOption {
	return clientOptionFunc(func(c *clientConfig) { c.onRetry = f })
}

type costKey struct{}

// ContextWithCost returns ctx carrying the cost of the call made with it,
// for the Client's default cost function.
func ContextWithCost(ctx context.Context, cost int64) context.Context {
	return context.WithValue(ctx, costKey{}, cost)
}

func defaultCost(ctx context.Context, _ string) int64 {
	if c, ok := ctx.Value(costKey{}).(int64); ok {
		return c
	}
	return 1
}
