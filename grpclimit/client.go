package grpclimit

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/internal/pause"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// ErrNotRetried is the Reason of the *retry.Error a Client returns when,
// after retries, an attempt failed with an error that is not retried.
var ErrNotRetried = errors.New("grpclimit: an attempt failed with an error that is not retried")

// Pauser is a limiter that a server can make back off as a whole:
// actor.Limiter is one (httplimit.Pauser is the same interface).
type Pauser interface {
	Pause(until time.Time) error
}

// Client paces the calls of a gRPC client and backs off when the server
// asks it to: httplimit's Transport, for gRPC. Install both interceptors:
//
//	grpc.NewClient(target, grpc.WithChainUnaryInterceptor(c.Unary), grpc.WithChainStreamInterceptor(c.Stream))
//
// For each unary call it
//
//  1. waits until the call's target (ClientConn.Target) is no longer
//     paused, and a jitter more; a pause that ends past the call's
//     deadline fails it at once;
//  2. acquires the call's cost (WithRequestCost) from the limiter, in FIFO
//     order, within the call's deadline; a limiter's refusal fails the call
//     at once with codes.ResourceExhausted and RetryInfo, matching
//     permits.ErrRateLimited, without sending anything;
//  3. passes the circuit breaker, if it has one (WithBreaker): an open one
//     fails the call at once with codes.Unavailable and the breaker's
//     RetryAfter as RetryInfo, matching breaker.ErrOpen;
//  4. sends the call (each attempt within WithAttemptTimeout, if set);
//  5. on a code it retries (DefaultRetryCodes) reads the status's RetryInfo,
//     pauses the target until then (capped by WithMaxPause; other targets
//     are not paused; WithPauseLimiter pauses the limiter instead), and
//     retries after that wait and a jitter above it (never below), or
//     after the back-off when there is no RetryInfo, through package retry,
//     spending a retry budget (WithRetry, WithBudget).
//
// A stream is paced and passes the breaker as it opens, and opening it is
// retried as a unary call is; once open it is never retried (its messages
// cannot be replayed), but a refusal it ends with still pauses the target,
// and its outcome is the breaker's. Its permit is held until it ends.
//
// Errors are status errors (status.Code works on every one), and a
// *retry.Error that wraps the last one whenever retries were made. A
// Client is safe for concurrent use; share one among the connections to
// one service.
type Client struct {
	lim          permits.Limiter
	pausers      []Pauser
	cost         func(ctx context.Context, method string) int64
	br           *breaker.Breaker
	policy       *retry.Policy
	maxPause     time.Duration
	pauseLimiter bool
	targets      pause.Table
	codes        [32]bool // by code, the codes retried
	attemptLimit time.Duration
	onRetryHook  func(attempt int, wait time.Duration, err error)
	jitter       func(time.Duration) time.Duration
	n            clientCounters
	targetPools  *pools // WithAdaptiveConcurrency; nil: none
}

// NewClient returns a Client that paces its calls with lim (permits.Unlimited
// for none: it still backs off and retries). It fails, matching
// permits.ErrInvalidConfig, for a nil lim, a pause cap or attempt timeout
// out of range, a code that is not one, retry options package retry
// refuses, or a WithAdaptiveConcurrency that NewAdaptivePool refuses.
func NewClient(lim permits.Limiter, opts ...ClientOption) (*Client, error) {
	if lim == nil {
		return nil, configerr.Errorf("grpclimit", "a nil limiter (use permits.Unlimited for none)")
	}
	cfg := clientConfig{cost: defaultCost, maxPause: DefaultMaxPause, codes: DefaultRetryCodes}
	for _, o := range opts {
		if o != nil {
			o.applyClient(&cfg)
		}
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	c := &Client{
		lim: permits.All(lim), cost: cfg.cost, br: cfg.breaker, maxPause: cfg.maxPause,
		pauseLimiter: cfg.pauseLimiter, attemptLimit: cfg.attemptTimeout, onRetryHook: cfg.onRetry,
		jitter: pause.JitterAbove,
	}
	if cfg.noJitter {
		c.jitter = func(time.Duration) time.Duration { return 0 }
	}
	for _, code := range cfg.codes {
		c.codes[code] = true
	}
	if c.pauseLimiter {
		permits.Each(lim, func(part permits.Limiter) {
			if p, ok := part.(Pauser); ok {
				c.pausers = append(c.pausers, p)
			}
		})
	}
	if !cfg.budgetSet {
		cfg.budget, _ = budget.New() // the defaults are valid
	}
	ropts := append(append([]retry.Option(nil), cfg.retry...),
		retry.WithBudget(cfg.budget), retry.WithClassifier(classify), retry.WithOnRetry(c.onRetry))
	policy, err := retry.New(ropts...)
	if err != nil {
		return nil, configerr.Errorf("grpclimit", "%w", err)
	}
	c.policy = policy
	if cfg.adaptive {
		if c.targetPools, err = newPools("grpclimit client", cfg.newCtl, cfg.adaptiveOpts, DefaultMaxTargets); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (cfg *clientConfig) check() error {
	if cfg.maxPause <= 0 {
		return configerr.Errorf("grpclimit", "the pause cap must be positive, got %v", cfg.maxPause)
	}
	if cfg.attemptTimeout < 0 {
		return configerr.Errorf("grpclimit", "the attempt timeout must not be negative, got %v", cfg.attemptTimeout)
	}
	for _, code := range cfg.codes {
		if code == codes.OK || code >= 32 {
			return configerr.Errorf("grpclimit", "retry code %v is not an error code", code)
		}
	}
	return nil
}

// Unary is a grpc.UnaryClientInterceptor: it sends the call as Client's
// documentation describes.
func (c *Client) Unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	call, err := c.newCall(ctx, method, cc.Target())
	if err != nil {
		return err
	}
	return call.finish(c.policy.Do(ctx, func(ctx context.Context) error {
		return call.attempt(ctx, func(ctx context.Context) error {
			return invoker(ctx, method, req, reply, cc, opts...)
		})
	}))
}

// newCall counts a call and prices it.
func (c *Client) newCall(ctx context.Context, method, target string) (*clientCall, error) {
	c.n.calls.Add(1)
	cost := c.cost(ctx, method)
	if cost < 1 {
		return nil, localError(permits.InvalidCost(cost))
	}
	return &clientCall{c: c, target: target, cost: cost}, nil
}

// ClientStats is what a Client has done since it was made.
type ClientStats struct {
	Calls    int64 // calls and streams begun
	Attempts int64 // attempts sent to the server
	Retries  int64 // retries decided
	Pauses   int64 // refusals that paused a target or the limiter
	Capped   int64 // of which asked for longer than the pause cap
}

// Stats returns the counters. Safe for concurrent use.
func (c *Client) Stats() ClientStats {
	return ClientStats{Calls: c.n.calls.Load(), Attempts: c.n.attempts.Load(),
		Retries: c.n.retries.Load(), Pauses: c.n.pauses.Load(), Capped: c.n.capped.Load()}
}

type clientCounters struct{ calls, attempts, retries, pauses, capped atomic.Int64 }

// BreakerClassifier is a classifier for a Client's circuit breaker
// (breaker.WithClassifier): ResourceExhausted says the server's quota is
// used up, not that the server is unwell, and is Ignored, as is a call
// its caller cancelled; every other error is a Failure.
func BreakerClassifier(err error) breaker.Outcome {
	switch status.Code(err) {
	case codes.ResourceExhausted, codes.Canceled:
		return breaker.Ignored
	}
	if errors.Is(err, context.Canceled) {
		return breaker.Ignored
	}
	return breaker.Failure
}

// onRetry is the retry loop's hook.
func (c *Client) onRetry(e retry.Event) {
	c.n.retries.Add(1)
	if c.onRetryHook != nil {
		err := e.Err
		if a, ok := err.(*attemptError); ok {
			err = a.err
		}
		c.onRetryHook(e.Attempt, e.Wait, err)
	}
}

// classify is the retry loop's classifier: attempt decides what may be
// retried, by returning an *attemptError.
func classify(err error) retry.Class {
	if _, ok := err.(*attemptError); ok {
		return retry.Transient
	}
	return retry.Permanent
}
