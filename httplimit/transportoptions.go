package httplimit

import (
	"context"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
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
