package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/configerr"
	"github.com/sluicehq/sluice/permits"
)

// ErrOverloaded is matched by the error of a request a Shedder shed: its
// route had as many requests in flight as its adaptive limit allows.
var ErrOverloaded = errors.New("httplimit: route at its concurrency limit")

// Shedder is server-side load shedding: it bounds the requests in flight
// on each route by an actor.AdaptivePool of the route's own, whose limit a
// controller moves from the handler's latency and its 503s
// (docs/adaptive.md), and sheds what does not fit with 503 Service
// Unavailable, Retry-After and a problem body, before the handler runs.
// Use it alone (Handler) or inside Middleware's rate limit (WithShedder):
// the rate limit decides first, so a client over its quota never takes a
// slot from those within theirs.
//
// Routes come from a KeyFunc, KeyByRoute's ServeMux patterns typically:
// a fixed set, whatever paths clients send. The table holds at most
// WithMaxRoutes routes (DefaultMaxRoutes); the routes seen after it is
// full share one overflow pool, so that a key function that hostile
// paths can make unique costs one pool, not one per path. A Shedder is
// safe for concurrent use; Close it to stop its pools' goroutines.
type Shedder struct {
	route   KeyFunc
	routes  *routePools
	wait    bool
	maxWait time.Duration
}

// NewShedder returns a Shedder that keys requests by route and gives each
// route an adaptive pool with a controller from newController (one per
// route: a controller keeps state). It fails, matching
// permits.ErrInvalidConfig, for a nil route or newController, a route
// bound below 1, or pool options actor.NewAdaptivePool refuses.
func NewShedder(route KeyFunc, newController func() actor.Controller, opts ...ShedOption) (*Shedder, error) {
	cfg := shedConfig{maxRoutes: DefaultMaxRoutes}
	for _, o := range opts {
		if o != nil {
			o.applyShed(&cfg)
		}
	}
	switch {
	case route == nil || newController == nil:
		return nil, configerr.Errorf("httplimit", "a Shedder needs a route key and a controller constructor, got nil")
	case cfg.maxRoutes < 1:
		return nil, configerr.Errorf("httplimit", "WithMaxRoutes must be at least 1, got %d", cfg.maxRoutes)
	}
	rp, err := newRoutePools(newController, cfg.pool, cfg.maxRoutes)
	if err != nil {
		return nil, err
	}
	return &Shedder{route: route, routes: rp, wait: cfg.wait, maxWait: cfg.maxWait}, nil
}

// Handler returns next behind the Shedder alone; a request it cannot key
// gets 400, as Middleware answers it.
func (s *Shedder) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, next, failShed) })
}

// failShed is the default error handler of Middleware and of a Shedder
// alone: fail's problems, and 503 for a shed request.
func failShed(w http.ResponseWriter, r *http.Request, err error) {
	if !errors.Is(err, ErrOverloaded) {
		fail(w, r, err)
		return
	}
	WriteProblem(w, Problem{Type: "about:blank", Title: http.StatusText(http.StatusServiceUnavailable),
		Status: http.StatusServiceUnavailable, Detail: err.Error()})
}

// Close stops the goroutines of the route pools; a request after it gets
// 503 (permits.ErrClosed). It is idempotent and returns nil.
func (s *Shedder) Close() error {
	return s.routes.Close()
}

// RouteConcurrency returns the stats of route's pool, and false if the
// route has none (yet). OverflowRoute names the shared one.
func (s *Shedder) RouteConcurrency(route string) (actor.AdaptiveStats, bool) {
	if p := s.routes.Lookup(route); p != nil {
		return p.Pool.Stats(), true
	}
	return actor.AdaptiveStats{}, false
}

// Routes returns how many routes have a pool of their own.
func (s *Shedder) Routes() int { return s.routes.Len() }

// serve admits r to its route's pool, or sheds it with onErr; once
// admitted, it runs next and reports its outcome.
func (s *Shedder) serve(w http.ResponseWriter, r *http.Request, next http.Handler, onErr func(http.ResponseWriter, *http.Request, error)) {
	k, err := s.route(r)
	if err != nil {
		onErr(w, r, err)
		return
	}
	rp, err := s.routes.Get(k)
	if err != nil {
		onErr(w, r, err)
		return
	}
	pm, err := s.acquire(r.Context(), rp)
	if err != nil {
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			return // the client went away while it waited
		}
		s.shed(w, r, rp, err, onErr)
		return
	}
	run(w, r, next, rp, pm)
}

// acquire takes a slot of rp: at once, or with WithShedWait in FIFO
// order within r's context and the wait's bound.
func (s *Shedder) acquire(ctx context.Context, rp *routePool) (permits.Permit, error) {
	if !s.wait || s.maxWait == 0 {
		return rp.Pool.TryAcquire(1)
	}
	if s.maxWait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.maxWait)
		defer cancel()
	}
	return rp.Pool.Acquire(ctx, 1)
}

// shed answers a request that found no slot. A closed Shedder, or a
// request that cannot fit at all, is onErr's as it is; anything else is
// a shed request: Retry-After, then onErr with an error matching
// ErrOverloaded (503 by default).
func (s *Shedder) shed(w http.ResponseWriter, r *http.Request, rp *routePool, err error, onErr func(http.ResponseWriter, *http.Request, error)) {
	if !errors.Is(err, permits.ErrRateLimited) && !errors.Is(err, context.DeadlineExceeded) {
		onErr(w, r, err)
		return
	}
	wait := retryAfter(rp)
	w.Header()["Retry-After"] = []string{strconv.FormatInt(retrySeconds(wait), 10)}
	onErr(w, r, &ShedError{Route: rp.Key, Limit: rp.Pool.Limit(), RetryAfter: wait, Cause: err})
}

// ShedError is the error of a shed request: its route, the route's limit
// when it was shed, and the wait Retry-After says (docs/http.md, Load
// shedding). It matches ErrOverloaded, and through its Cause the pool's
// permits.ErrRateLimited or WithShedWait's context.DeadlineExceeded.
type ShedError struct {
	Route      string
	Limit      int64
	RetryAfter time.Duration
	Cause      error
}

func (e *ShedError) Error() string {
	return fmt.Sprintf("httplimit: route %q has %d requests in flight, its limit now; retry after %d s",
		e.Route, e.Limit, retrySeconds(e.RetryAfter))
}

// Is matches ErrOverloaded.
func (e *ShedError) Is(target error) bool { return target == ErrOverloaded }

// Unwrap returns the pool's refusal (or the wait's deadline).
func (e *ShedError) Unwrap() error { return e.Cause }
