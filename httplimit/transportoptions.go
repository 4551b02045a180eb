package httplimit

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// TransportOption configures a Transport. Options are values, immutable
// once made: build them once and share them. A nil TransportOption is
// ignored.
type TransportOption interface{ applyTransport(*transportConfig) }

type transportConfig struct {
	base      http.RoundTripper
	cost      func(*http.Request) int64
	settle    func(*http.Response) (int64, bool)
	retry     []retry.Option
	budget    *budget.RetryBudget
	budgetSet bool
	breaker   *breaker.Breaker
	maxPause  time.Duration
	anyMethod bool
	// What WithPauseLimiter, WithRetryStatuses, WithAttemptTimeout and
	// WithOnRetry set.
	pauseLimiter   bool
	statuses       []int
	attemptTimeout time.Duration
	onRetry        func(attempt int, wait time.Duration, resp *http.Response, err error)
	noJitter       bool             // for the tests (export_test.go)
	logger         *slog.Logger     // WithLogger (transportlog.go); nil: no lines
	adaptive       *hostPools       // WithAdaptiveConcurrency
	observer       permits.Observer // WithObserver (transportstats.go)
}

type transportOption func(*transportConfig)

func (f transportOption) applyTransport(c *transportConfig) { f(c) }

// DefaultMaxPause is the longest pause a response can ask of a Transport
// unless WithMaxPause says otherwise.
const DefaultMaxPause = time.Minute

// WithBase sets the RoundTripper that sends the requests: an
// *http.Transport of your own, or an in-process one in tests. The default
// (and nil) is http.DefaultTransport.
func WithBase(rt http.RoundTripper) TransportOption {
	return transportOption(func(c *transportConfig) { c.base = rt })
}

// WithRequestCost sets what a request costs, asked of the limiter before it
// is sent: the tokens an LLM request may use (its prompt's and its
// max_tokens), its body's size. The default is the cost ContextWithCost put
// in the request's context, or 1. A cost below 1 fails the request with an
// error matching permits.ErrInvalidCost; one above what the limiter can
// ever grant, with permits.ErrCostExceedsCapacity. nil is ignored.
func WithRequestCost(cost func(*http.Request) int64) TransportOption {
	return transportOption(func(c *transportConfig) {
		if cost != nil {
			c.cost = cost
		}
	})
}

// WithSettle sets how the real cost of a request is read from its response
// (a usage header, say), so that the permit is settled with it
// (permits.Settle): the rate parts of the limiter give back what the
// estimate overstated, as far as their refund rule allows, and charge what
// it understated as a debt. It is called once for every response,
// refusals included (a 429 used nothing, typically: return 0, true), before
// the body is read; ok false keeps the estimate. It may replace the
// response's Body, to read usage from a JSON body and put back what it read.
// nil is ignored.
func WithSettle(actual func(*http.Response) (cost int64, ok bool)) TransportOption {
	return transportOption(func(c *transportConfig) {
		if actual != nil {
			c.settle = actual
		}
	})
}

// WithRetry sets the retry loop's options: attempts, back-off, the time
// spent retrying, a jitter seed for tests (package retry; the defaults are
// retry's: 3 attempts, 100ms to 10s, a minute). The Transport sets the
// classifier, the hook and the budget itself, after these: use
// WithBudget for the budget. retry.WithMaxAttempts(1) turns retrying off;
// the pauses still happen.
func WithRetry(opts ...retry.Option) TransportOption {
	return transportOption(func(c *transportConfig) { c.retry = append(c.retry, opts...) })
}

// WithBudget sets the retry budget the Transport's retries spend: every
// request deposits once, every retry withdraws, and a retry the budget
// refuses is not made (the response is handed back). nil means no budget.
// The default is a budget of package budget's defaults of the Transport's
// own; share one between Transports that call the same API.
func WithBudget(b *budget.RetryBudget) TransportOption {
	return transportOption(func(c *transportConfig) { c.budget, c.budgetSet = b, true })
}

// WithBreaker passes every attempt through a circuit breaker: an attempt
// the breaker refuses is not sent (it is retried after the breaker's
// RetryAfter, if the retry loop has the time), and every attempt sent
// reports its outcome: a network error as it is, a 429 or a 5xx as a
// *StatusError, anything else as a success. Give the breaker
// BreakerClassifier so that 429s, a quota rather than the API's health, do
// not open it. nil means none.
func WithBreaker(b *breaker.Breaker) TransportOption {
	return transportOption(func(c *transportConfig) { c.breaker = b })
}

// WithMaxPause caps the pause any response can impose (d > 0; default
// DefaultMaxPause). A response that asks for longer (a Retry-After of a
// day, a reset in 2100) pauses the limiter for d only and is not retried:
// the caller gets it as it is, at once.
func WithMaxPause(d time.Duration) TransportOption {
	return transportOption(func(c *transportConfig) { c.maxPause = d })
}

// WithRetryNonIdempotent retries every request whose body can be sent
// again, whatever its method, after a 429 or a 503 and after a network
// error. Without it, see Transport for which requests are retried.
func WithRetryNonIdempotent() TransportOption {
	return transportOption(func(c *transportConfig) { c.anyMethod = true })
}

// DefaultRetryStatuses are the statuses a Transport retries unless
// WithRetryStatuses says otherwise: 429 Too Many Requests, 502 Bad
// Gateway, 503 Service Unavailable, 504 Gateway Timeout and 529, which
// overloaded LLM APIs send.
var DefaultRetryStatuses = []int{http.StatusTooManyRequests, http.StatusBadGateway,
	http.StatusServiceUnavailable, http.StatusGatewayTimeout, 529}

// WithRetryStatuses sets the statuses whose responses are retried (each a
// 4xx or a 5xx; none turns retrying responses off). A 502 or 504 says the
// request may have reached the API, so only requests that are retried
// after a network error are retried after them (see Transport). nil
// keeps DefaultRetryStatuses.
func WithRetryStatuses(codes ...int) TransportOption {
	return transportOption(func(c *transportConfig) {
		if codes != nil {
			c.statuses = append([]int{}, codes...)
		}
	})
}

// WithPauseLimiter makes a response that asks for a wait pause the whole
// limiter (every part that is a Pauser) instead of its host alone: for a
// limiter that is one API's quota, where every request waits out the
// pause in the limiter's FIFO order, and a redislimit.Window shares it
// with other processes. Without it, the host that asked is paused and
// other hosts are not.
func WithPauseLimiter() TransportOption {
	return transportOption(func(c *transportConfig) { c.pauseLimiter = true })
}

// WithAttemptTimeout bounds each attempt, from its send to its response's
// header (d > 0; 0, the default, leaves only the request's context). An
// attempt that times out fails with an error matching ErrAttemptTimeout
// and context.DeadlineExceeded, and is retried as a network error is. The
// body of a response handed back is not bounded by it.
func WithAttemptTimeout(d time.Duration) TransportOption {
	return transportOption(func(c *transportConfig) { c.attemptTimeout = d })
}

// WithOnRetry sets a hook called, in RoundTrip's goroutine, when a retry
// is decided and before its wait: attempt is the attempt that failed (from
// 1), wait the time before the next, and resp the response that asked for
// the retry (nil after a network error, a timeout or a breaker's
// refusal), whose status and header it may read; its body is drained and
// closed after the hook returns. err is the attempt's error: a
// *StatusError for a response. For logs and metrics. nil means none.
func WithOnRetry(f func(attempt int, wait time.Duration, resp *http.Response, err error)) TransportOption {
	return transportOption(func(c *transportConfig) { c.onRetry = f })
}

type costKey struct{}

// ContextWithCost returns ctx carrying the cost of the request made with
// it, for the Transport's default cost function:
//
//	req, err := http.NewRequestWithContext(httplimit.ContextWithCost(ctx, estimate), "POST", url, body)
func ContextWithCost(ctx context.Context, cost int64) context.Context {
	return context.WithValue(ctx, costKey{}, cost)
}

// CostFromContext returns the cost ContextWithCost put in ctx, and whether
// there is one.
func CostFromContext(ctx context.Context) (int64, bool) {
	c, ok := ctx.Value(costKey{}).(int64)
	return c, ok
}

func defaultCost(r *http.Request) int64 {
	if c, ok := CostFromContext(r.Context()); ok {
		return c
	}
	return 1
}
