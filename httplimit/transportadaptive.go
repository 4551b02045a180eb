package httplimit

import (
	"context"
	"errors"
	"net/http"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/pooltable"
	"github.com/sluicehq/sluice/permits"
)

// DefaultMaxHosts is how many hosts a Transport's adaptive concurrency
// gives a pool of their own: more than most clients call, few enough that
// the table of pools (a goroutine and about 2 KiB each) stays small for a
// client that calls a new host every time (a crawler, webhooks).
const DefaultMaxHosts = 256

// WithAdaptiveConcurrency limits the requests in flight to each host
// (URL.Host, port included) by an actor.AdaptivePool of its own, made at
// the host's first request with a controller from newController (one per
// host: a controller keeps state) and opts (actor.WithLimits; the default
// is 1, 20, 1000). An attempt waits, in FIFO order, for the host's pool
// after the limiter, and holds it until its response's headers come: the
// pool learns the host's latency from them, and a 429 or 503 as Overload,
// a 504 or an attempt that timed out as Timeout, another 5xx or a network
// error as nothing (docs/adaptive.md).
//
// At most DefaultMaxHosts hosts get a pool of their own; the hosts first
// sent to after that share one more, OverflowRoute's, so a client that
// calls many hosts keeps DefaultMaxHosts+1 pools, not one per host. A
// host keeps its pool until Close: the limit it learnt is never lost to a
// burst of new hosts. Close the Transport to stop the pools' goroutines.
// NewTransport fails, matching permits.ErrInvalidConfig, for a nil
// newController or options actor.NewAdaptivePool refuses.
func WithAdaptiveConcurrency(newController func() actor.Controller, opts ...actor.AdaptiveOption) TransportOption {
	return transportOption(func(c *transportConfig) {
		c.adaptive = &hostPools{cfg: pooltable.Config{
			Pkg: "httplimit", Name: "httplimit", NewController: newController, Options: opts, Max: DefaultMaxHosts,
		}}
	})
}

// hostPools is the adaptive pool of each host a Transport has sent to
// (internal/pooltable); t is made by validate, which NewTransport calls.
type hostPools struct {
	cfg pooltable.Config
	t   *pooltable.Table
}

// validate makes the table, which makes and closes one pool, so that a
// bad configuration fails NewTransport rather than the first request.
func (h *hostPools) validate() error {
	t, err := pooltable.New(h.cfg)
	h.t = t
	return err
}

// hostPermit is what an attempt holds of its host's pool (nil: nothing).
type hostPermit struct {
	p  *actor.AdaptivePool
	pm permits.Permit
}

// acquireHost waits for req's host's pool, if the Transport has them.
func (t *Transport) acquireHost(ctx context.Context, req *http.Request) (*hostPermit, error) {
	if t.adaptive == nil {
		return nil, nil
	}
	e, err := t.adaptive.t.Get(req.URL.Host)
	if err != nil {
		return nil, err
	}
	pm, err := e.Pool.Acquire(ctx, 1)
	if err != nil {
		return nil, err
	}
	return &hostPermit{p: e.Pool, pm: pm}, nil
}

// end reports the attempt's outcome: resp's status, or err.
func (h *hostPermit) end(resp *http.Response, err error) {
	if h == nil {
		return
	}
	o := actor.Dropped
	switch {
	case err != nil && (errors.Is(err, ErrAttemptTimeout) || errors.Is(err, context.DeadlineExceeded)):
		o = actor.Timeout
	case err != nil:
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		o = actor.Overload
	case resp.StatusCode == http.StatusGatewayTimeout:
		o = actor.Timeout
	case resp.StatusCode < 500:
		o = actor.Success
	}
	h.p.Done(h.pm, o)
}

// HostConcurrency returns the stats of host's adaptive pool
// (WithAdaptiveConcurrency; OverflowRoute: the one the hosts past
// DefaultMaxHosts share), and false if it has none (yet).
func (t *Transport) HostConcurrency(host string) (actor.AdaptiveStats, bool) {
	if t.adaptive == nil {
		return actor.AdaptiveStats{}, false
	}
	if e := t.adaptive.t.Lookup(host); e != nil {
		return e.Pool.Stats(), true
	}
	return actor.AdaptiveStats{}, false
}

// Close stops the goroutines of the per-host adaptive pools
// (WithAdaptiveConcurrency); a request after it fails with
// permits.ErrClosed. Without that option it does nothing. It is
// idempotent and returns nil.
func (t *Transport) Close() error {
	if t.adaptive != nil {
		return t.adaptive.t.Close()
	}
	return nil
}

// errNotSent ends a host permit whose attempt the breaker refused: it says
// nothing of the host.
var errNotSent = errors.New("httplimit: not sent")
