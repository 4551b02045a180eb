package httplimit

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

// WithAdaptiveConcurrency limits the requests in flight to each host
// (URL.Host, port included) by an actor.AdaptivePool of its own, made at
// the host's first request with a controller from newController (one per
// host: a controller keeps state) and opts (actor.WithLimits; the default
// is 1, 20, 1000). An attempt waits, in FIFO order, for the host's pool
// after the limiter, and holds it until its response's headers come: the
// pool learns the host's latency from them, and a 429 or 503 as Overload,
// a 504 or an attempt that timed out as Timeout, another 5xx or a network
// error as nothing (docs/adaptive.md). Close the Transport to stop the
// pools' goroutines. NewTransport fails, matching
// permits.ErrInvalidConfig, for a nil newController or options
// actor.NewAdaptivePool refuses.
func WithAdaptiveConcurrency(newController func() actor.Controller, opts ...actor.AdaptiveOption) TransportOption {
	return transportOption(func(c *transportConfig) {
		c.adaptive = &hostPools{newCtl: newController, opts: opts, m: map[string]*actor.AdaptivePool{}}
	})
}

// hostPools is the adaptive pool of each host a Transport has sent to.
type hostPools struct {
	newCtl func() actor.Controller
	opts   []actor.AdaptiveOption
	mu     sync.Mutex
	m      map[string]*actor.AdaptivePool
	closed bool
}

// validate makes, and closes, one pool, so that a bad configuration fails
// NewTransport rather than the first request.
func (h *hostPools) validate() error {
	var ctl actor.Controller
	if h.newCtl != nil {
		ctl = h.newCtl()
	}
	p, err := actor.NewAdaptivePool(ctl, h.opts...)
	if err != nil {
		return err
	}
	return p.Close()
}

// pool returns host's pool, made at its first request.
func (h *hostPools) pool(host string) (*actor.AdaptivePool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, permits.ErrClosed
	}
	if p, ok := h.m[host]; ok {
		return p, nil
	}
	p, err := actor.NewAdaptivePool(h.newCtl(), append(h.opts[:len(h.opts):len(h.opts)], actor.WithName("httplimit "+host))...)
	if err != nil {
		return nil, err // validated: a controller that newController made wrong this time
	}
	h.m[host] = p
	return p, nil
}

func (h *hostPools) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, p := range h.m {
		_ = p.Close()
	}
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
	p, err := t.adaptive.pool(req.URL.Host)
	if err != nil {
		return nil, err
	}
	pm, err := p.Acquire(ctx, 1)
	if err != nil {
		return nil, err
	}
	return &hostPermit{p: p, pm: pm}, nil
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
// (WithAdaptiveConcurrency), and false if it has none (yet).
func (t *Transport) HostConcurrency(host string) (actor.AdaptiveStats, bool) {
	if t.adaptive == nil {
		return actor.AdaptiveStats{}, false
	}
	t.adaptive.mu.Lock()
	p, ok := t.adaptive.m[host]
	t.adaptive.mu.Unlock()
	if !ok {
		return actor.AdaptiveStats{}, false
	}
	return p.Stats(), true
}

// Close stops the goroutines of the per-host adaptive pools
// (WithAdaptiveConcurrency); a request after it fails with
// permits.ErrClosed. Without that option it does nothing. It is
// idempotent and returns nil.
func (t *Transport) Close() error {
	if t.adaptive != nil {
		t.adaptive.close()
	}
	return nil
}

// errNotSent ends a host permit whose attempt the breaker refused: it says
// nothing of the host.
var errNotSent = errors.New("httplimit: not sent")
