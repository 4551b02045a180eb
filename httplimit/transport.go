package httplimit

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/internal/pause"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// ErrNotRetried is the Reason of the *retry.Error a Transport returns
// when, after retries, an attempt failed with an error that is not
// retried (a limiter's refusal, a network error on a POST): the error's
// type is *retry.Error whenever retries were made, as documented.
var ErrNotRetried = errors.New("httplimit: an attempt failed with an error that is not retried")

// ErrAttemptTimeout is matched by the error of an attempt that ran past
// WithAttemptTimeout.
var ErrAttemptTimeout = errors.New("httplimit: the attempt timed out")

// ErrInvalidConfig is permits.ErrInvalidConfig, the one error that every
// configuration error of sluice matches.
//
// Deprecated: match permits.ErrInvalidConfig, the same error.
var ErrInvalidConfig = configerr.ErrInvalid

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
//  5. on a status it retries (DefaultRetryStatuses: 429, 502, 503, 504,
//     529; WithRetryStatuses), reads how long the API asks it to wait
//     (ParseWait: Retry-After, the RateLimit fields, x-ratelimit-*),
//     pauses the response's host until then, so that no request to that
//     host goes out before (other hosts are not paused; WithPauseLimiter
//     pauses every part of the limiter that can pause instead, for a
//     limiter that is one API's quota), and retries the request after
//     that wait and a jitter above it (never below) through package
//     retry, spending a retry budget (WithRetry, WithBudget);
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
// limiter's, the breaker's or the base's as they are when no retry was
// made, and a *retry.Error that wraps the last one whenever retries were
// made (its Reason ErrNotRetried when the last error may not be retried).
//
// A Transport is safe for concurrent use, and is meant to be shared by
// every goroutine that calls the API. Its state beyond the limiter is a
// few counters and the hosts paused now (Stats).
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
	// pauseLimiter pauses the limiter's Pausers on a wait, for every host
	// (WithPauseLimiter); otherwise hosts pauses the host that asked.
	pauseLimiter bool
	hosts        pause.Table
	statuses     map[int]bool // the statuses retried (WithRetryStatuses)
	attemptLimit time.Duration
	onRetryHook  func(attempt int, wait time.Duration, resp *http.Response, err error)
	jitter       func(time.Duration) time.Duration // pause.JitterAbove, or none in tests
	logger       *slog.Logger                      // WithLogger; nil: no lines
	adaptive     *hostPools                        // WithAdaptiveConcurrency, or nil
	observer     permits.Observer                  // WithObserver, or nil
	n            counters
	paused       pausedHosts // the hosts paused now, for Stats
}

// NewTransport returns a Transport that limits its requests by lim: one
// limiter, or a permits.All of a request rate, a token rate and a pool
// (each part wrapped in permits.FixedCost where a request costs it one
// unit whatever its tokens). It fails, matching ErrInvalidConfig, for a nil
// lim, a pause cap that is not positive, or retry options that package
// retry refuses.
func NewTransport(lim permits.Limiter, opts ...TransportOption) (*Transport, error) {
	if lim == nil {
		return nil, configerr.Errorf("httplimit", "a nil limiter (use permits.Unlimited for none)")
	}
	cfg := transportConfig{cost: defaultCost, maxPause: DefaultMaxPause, statuses: DefaultRetryStatuses}
	for _, o := range opts {
		if o != nil {
			o.applyTransport(&cfg)
		}
	}
	statuses, err := cfg.complete()
	if err != nil {
		return nil, err
	}
	t := &Transport{
		base: cfg.base, lim: permits.All(lim), cost: cfg.cost, settle: cfg.settle,
		br: cfg.breaker, maxPause: cfg.maxPause, anyMethod: cfg.anyMethod,
		pauseLimiter: cfg.pauseLimiter, statuses: statuses, attemptLimit: cfg.attemptTimeout,
		onRetryHook: cfg.onRetry, jitter: pause.JitterAbove, logger: cfg.logger,
		adaptive: cfg.adaptive, observer: cfg.observer,
	}
	if cfg.noJitter {
		t.jitter = func(time.Duration) time.Duration { return 0 }
	}
	permits.Each(lim, func(part permits.Limiter) {
		if !t.pauseLimiter {
			return
		}
		if p, ok := part.(Pauser); ok {
			t.pausers = append(t.pausers, p)
		}
	})
	ropts := append(append([]retry.Option(nil), cfg.retry...),
		retry.WithBudget(cfg.budget), retry.WithClassifier(classify), retry.WithOnRetry(t.onRetry))
	policy, err := retry.New(ropts...)
	if err != nil {
		return nil, configerr.Errorf("httplimit", "%w", err)
	}
	t.policy = policy
	return t, nil
}

// complete checks cfg, fills in its defaults, and returns the set of
// statuses to retry.
func (cfg *transportConfig) complete() (map[int]bool, error) {
	if cfg.maxPause <= 0 {
		return nil, configerr.Errorf("httplimit", "the pause cap must be positive, got %v", cfg.maxPause)
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
	if cfg.adaptive != nil {
		if err := cfg.adaptive.validate(); err != nil {
			return nil, err
		}
	}
	if cfg.attemptTimeout < 0 {
		return nil, configerr.Errorf("httplimit", "the attempt timeout must not be negative, got %v", cfg.attemptTimeout)
	}
	statuses := map[int]bool{}
	for _, code := range cfg.statuses {
		if code < 400 || code > 599 {
			return nil, configerr.Errorf("httplimit", "retry status %d is not a 4xx or 5xx", code)
		}
		statuses[code] = true
	}
	return statuses, nil
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
	jitter  time.Duration // added above Wait for the retry (pause.JitterAbove)
}

func (e *StatusError) Error() string {
	s := "httplimit: " + strconv.Itoa(e.StatusCode) + " " + http.StatusText(e.StatusCode)
	if e.HasWait {
		s += ", wait " + e.Wait.String()
	}
	return s
}

// RetryAfter returns Wait, with a jitter of up to a quarter of it (at
// least 100 ms, at most 5 s) above it, and HasWait, so that package retry
// waits at least that long (retry.RetryAfterer), and the callers one
// Retry-After stopped do not come back at one instant.
func (e *StatusError) RetryAfter() (time.Duration, bool) { return e.Wait + e.jitter, e.HasWait }

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

// pause pauses r's host, or with WithPauseLimiter every part of the
// limiter that can pause, for wait from now: what se asked for, capped.
func (t *Transport) pause(r *http.Request, se *StatusError, now time.Time, wait time.Duration) {
	if !t.pauseLimiter {
		host := hostOf(r)
		until := now.Add(wait)
		t.paused.pause(host, until.UnixNano())
		if !t.hosts.PauseAt(host, now, until) {
			return
		}
		t.n.pauseStarted(se.StatusCode)
		if t.logger != nil {
			t.logPaused(host, se.StatusCode, now, wait, se.Wait)
		}
		return
	}
	t.n.pauseStarted(se.StatusCode)
	until := now.Add(wait)
	for _, p := range t.pausers {
		_ = p.Pause(until) // a closed part fails its Acquire anyway
	}
}

// onRetry is the retry loop's hook: a retry is decided, so the response
// that asked for it is discarded before the wait.
func (t *Transport) onRetry(e retry.Event) {
	t.n.retries.Add(1)
	a, ok := e.Err.(*attemptError)
	if t.onRetryHook != nil {
		var resp *http.Response
		err := e.Err
		if ok {
			resp, err = a.resp, a.err
		}
		t.onRetryHook(e.Attempt, e.Wait, resp, err)
	}
	if ok {
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
