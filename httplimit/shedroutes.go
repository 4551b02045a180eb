package httplimit

import (
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/pooltable"
)

// routePools is a Shedder's table of pools, one per route, made at the
// route's first request, at most WithMaxRoutes of them plus the overflow
// pool (internal/pooltable). After the first request of each route the
// table only grows when a new route comes, which a ServeMux's fixed set
// of patterns makes rare.
type routePools = pooltable.Table

// routePool is one route's pool and the average time of its handler.
type routePool = pooltable.Entry

// newRoutePools returns the table, having made and closed one pool so
// that a bad configuration fails NewShedder rather than the first
// request.
func newRoutePools(newCtl func() actor.Controller, opts []actor.AdaptiveOption, max int) (*routePools, error) {
	return pooltable.New(pooltable.Config{Pkg: "httplimit", Name: "httplimit", NewController: newCtl, Options: opts, Max: max})
}

// retryAfter is the wait a shed request is told: the route's average
// handler time. A slot frees when a request in flight ends, which is
// about one handler time away; sooner the client would meet a full route
// again. Retry-After rounds it up to whole seconds, at least 1.
func retryAfter(p *routePool) time.Duration { return p.Latency() }
