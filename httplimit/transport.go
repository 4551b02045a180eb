package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// ErrInvalidConfig is matched by the errors of NewTransport and KeyByIP:
// an option outside its documented range.
var ErrInvalidConfig = errors.New("httplimit: invalid configuration")

// Pauser is a limiter that an upstream can make back off as a whole:
// actor.Limiter is one. Pause(until) grants nothing before until, and a
// later pause extends an earlier one. The Transport calls it from the
// goroutines of its callers, so it must be safe for concurrent use.
type Pauser interface {
	Pause(until time.Time) error
}

// Transport is an http.RoundTripper for the client of a rate-limited API:
// an LLM API with requests per minute, tokens per minute and a cap on
// requests at once, say. For each request it
//
//  1. acquires the request's cost (WithRequestCost) from the limiter,
//     waiting its turn in FIFO order for as long as the request's context
//     allows; a limiter's refusal (a deadline too close, permits.MaxWait's
//     bound) is returned at once, without sending anything;
//  2. passes the circuit breaker, if it has one (WithBreaker);
//  3. sends a clone of the request, with the request's own context, through
//     the base RoundTripper (WithBase);
//  4. settles the permit with the real cost read from the response
//     (WithSettle);
//  5. on 429 Too Many Requests or 503 Service Unavailable, reads how long
//     the API asks it to wait (ParseWait: Retry-After, the RateLimit
//     fields, x-ratelimit-*), pauses every part of the limiter that can
//     pause (Pauser, found with permits.Each) until then, so that no
//     request of any caller goes out before, and retries the request after
//     that wait through package retry, spending a retry budget
//     (WithRetry, WithBudget);
//  6. returns the response, whose body holds the limiter's concurrency
//     permits (a pool) until it is read to the end or closed.
//
// Which requests are retried: a request is sent again only if its body can
// be (it has none, or GetBody is set, as http.NewRequest sets it for
// in-memory bodies). After a 429 or a 503, those whose method is
// idempotent (GET, HEAD, OPTIONS, TRACE, PUT, DELETE), that carry an
// Idempotency-Key, or whose body is replayable through GetBody are
// retried; after a network error, only the idempotent ones, since the
// server may have acted on the others. WithRetryNonIdempotent retries them
// all. An attempt the breaker refused was never sent, and is retried
// whatever the request.
//
// What it guarantees: it never modifies the caller's request; every
// response it discards to retry is drained (at most 64 KiB, for at most a
// second) and closed, and its permit released; the response it returns has
// its body intact, the last 429 included when retrying is over (attempts,
// budget, time or a wait beyond WithMaxPause); it closes the request's
// body, as a RoundTripper must, also when nothing was sent. A pause is
// never longer than WithMaxPause, whatever a response says. Errors are the
// limiter's, the breaker's or the base's as they are, or a *retry.Error
// that wraps the last one when retries were made.
//
// A Transport is safe for concurrent use, and is meant to be shared by
// every goroutine that calls the API. Its state beyond the limiter is a
// few counters (Stats).
type Transport struct {
	base      http.RoundTripper
	lim       permits.Limiter // All of the limiter given, so that its permits settle
	pausers   []Pauser
	cost      func(*http.Request) int64
	settle    func(*http.Response) (int64, bool)
	br        *breaker.Breaker
	policy    *retry.Policy
	maxPause  time.Duration
	anyMethod bool
	n         counters
}

// NewTransport returns a Transport that limits its requests by lim: one
// limiter, or a permits.All of a request rate, a token rate and a pool
// (each part wrapped in permits.FixedCost where a request costs it one
// unit whatever its tokens). It fails, matching ErrInvalidConfig, for a nil
// lim, a pause cap that is not positive, or retry options that package
// retry refuses.
func NewTransport(lim permits.Limiter, opts ...TransportOption) (*Transport, error) {
	if lim == nil {
		return nil, fmt.Errorf("%w: a nil limiter (use permits.Unlimited for none)", ErrInvalidConfig)
	}
	cfg := transportConfig{cost: defaultCost, maxPause: DefaultMaxPause}
	for _, o := range opts {
		if o != nil {
			o.applyTransport(&cfg)
		}
	}
	if cfg.maxPause <= 0 {
		return nil, fmt.Errorf("%w: the pause cap must be positive, got %v", ErrInvalidConfig, cfg.maxPause)
	}
	if cfg.base == nil {
		cfg.base = http.DefaultTransport
	}
	if !cfg.budgetSet {
		b, err := budget.New()
		if err != nil {
			return nil, err // the defaults are valid
		}
		cfg.budget = b
	}
	t := &Transport{
		base: cfg.base, lim: permits.All(lim), cost: cfg.cost, settle: cfg.settle,
		br: cfg.breaker, maxPause: cfg.maxPause, anyMethod: cfg.anyMethod,
	}
	permits.Each(lim, func(part permits.Limiter) {
		if p, ok := part.(Pauser); ok {
			t.pausers = append(t.pausers, p)
		}
	})
	ropts := append(append([]retry.Option(nil), cfg.retry...),
		retry.WithBudget(cfg.budget), retry.WithClassifier(classify), retry.WithOnRetry(t.onRetry))
	policy, err := retry.New(ropts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	t.policy = policy
	return t, nil
}

// RoundTrip sends req as the Transport's documentation describes. It is
// safe for concurrent use.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.n.requests.Add(1)
	c := &call{t: t, req: req}
	cost := t.cost(req)
	if cost < 1 {
		return c.finish(permits.InvalidCost(cost))
	}
	c.cost = cost
	resendable := !hasBody(req) || req.GetBody != nil
	idempotent := isIdempotent(req)
	c.retryResponse = resendable && (idempotent || req.GetBody != nil || t.anyMethod)
	c.retryError = resendable && (idempotent || t.anyMethod)
	return c.finish(t.policy.Do(req.Context(), c.attempt))
}

// CloseIdleConnections closes the idle connections of the base
// RoundTripper, if it has any (http.Client.CloseIdleConnections calls it).
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// TransportStats is what a Transport has done since it was made.
type TransportStats struct {
	Requests    int64 // RoundTrip calls
	Attempts    int64 // requests sent through the base RoundTripper
	Retries     int64 // retries decided (each followed by an attempt, unless the context ended)
	Throttled   int64 // 429 responses received
	Unavailable int64 // 503 responses received
	Pauses      int64 // responses that paused the limiter
	Capped      int64 // of which asked for longer than the pause cap
	Settled     int64 // permits settled with the cost read from their response
	SettleFails int64 // settlements the limiter refused (see permits.Settle)
}

// Stats returns the counters. Safe for concurrent use.
func (t *Transport) Stats() TransportStats {
	return TransportStats{
		Requests: t.n.requests.Load(), Attempts: t.n.attempts.Load(), Retries: t.n.retries.Load(),
		Throttled: t.n.throttled.Load(), Unavailable: t.n.unavailable.Load(), Pauses: t.n.pauses.Load(),
		Capped: t.n.capped.Load(), Settled: t.n.settled.Load(), SettleFails: t.n.settleFails.Load(),
	}
}

type counters struct {
	requests, attempts, retries, throttled, unavailable atomic.Int64
	pauses, capped, settled, settleFails                atomic.Int64
}

// StatusError is a response's status as an error: what the Transport's
// circuit breaker is told of a 429 or a 5xx, and what its retry loop sees
// of a 429 or 503 it may retry. RoundTrip never returns it: its caller gets
// the response itself.
type StatusError struct {
	StatusCode int
	// Wait is what the response's fields asked for (ParseWait), before the
	// pause cap; HasWait reports whether they asked.
	Wait    time.Duration
	HasWait bool
}

func (e *StatusError) Error() string {
	s := "httplimit: " + strconv.Itoa(e.StatusCode) + " " + http.StatusText(e.StatusCode)
	if e.HasWait {
		s += ", wait " + e.Wait.String()
	}
	return s
}

// RetryAfter returns Wait and HasWait, so that package retry waits at
// least that long (retry.RetryAfterer).
func (e *StatusError) RetryAfter() (time.Duration, bool) { return e.Wait, e.HasWait }

// BreakerClassifier is a classifier for the circuit breaker of a Transport
// (breaker.WithClassifier): a 429 says the API's quota is used up, not that
// the API is unwell, and is Ignored, as is context.Canceled; every other
// error (a 5xx *StatusError, a network error, a timeout) is a Failure.
func BreakerClassifier(err error) breaker.Outcome {
	var se *StatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusTooManyRequests || errors.Is(err, context.Canceled) {
		return breaker.Ignored
	}
	return breaker.Failure
}

// pause pauses every part that can pause until the instant until.
func (t *Transport) pause(until time.Time) {
	for _, p := range t.pausers {
		_ = p.Pause(until) // a closed part fails its Acquire anyway
	}
}

// onRetry is the retry loop's hook: a retry is decided, so the response
// that asked for it is discarded before the wait.
func (t *Transport) onRetry(e retry.Event) {
	t.n.retries.Add(1)
	if a, ok := e.Err.(*attemptError); ok {
		a.discard()
	}
}

// classify is the retry loop's classifier: attempt decides what may be
// retried.
func classify(err error) retry.Class {
	if a, ok := err.(*attemptError); ok && a.retry {
		return retry.Transient
	}
	return retry.Permanent
}

func hasBody(r *http.Request) bool { return r.Body != nil && r.Body != http.NoBody }

// isIdempotent reports whether r's method is idempotent (RFC 9110 9.2.2),
// or r carries an idempotency key, as net/http itself decides when it may
// send a request again.
func isIdempotent(r *http.Request) bool {
	switch r.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return r.Header.Get("Idempotency-Key") != "" || r.Header.Get("X-Idempotency-Key") != ""
}
