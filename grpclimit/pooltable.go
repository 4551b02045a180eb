package grpclimit

import (
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/pooltable"
	"github.com/sluicehq/sluice/permits"
)

// OverflowKey names the pool that the methods (or targets) past the
// table's bound share, for Shedder.MethodConcurrency and
// Client.TargetConcurrency.
const OverflowKey = pooltable.Overflow

// pools is a table of adaptive pools, one per method or target, made at
// its first call, at most max of them plus one overflow pool: a server's
// methods and a client's targets are few, but a table that hostile
// method names (a server with an UnknownServiceHandler) could grow must
// still be bounded.
type pools = pooltable.Table

// keyPool is one key's pool and the average time of its calls.
type keyPool = pooltable.Entry

// newPools returns a table whose pools are named name+" "+key. It fails,
// matching permits.ErrInvalidConfig, for a nil newCtl or options that
// actor.NewAdaptivePool refuses.
func newPools(name string, newCtl func() actor.Controller, opts []actor.AdaptiveOption, max int) (*pools, error) {
	if newCtl == nil {
		return nil, errNilController
	}
	return pooltable.New(pooltable.Config{Pkg: "grpclimit", Name: name, NewController: newCtl, Options: opts, Max: max})
}

// poolStats returns the stats of key's pool in t (OverflowKey: the shared
// one).
func poolStats(t *pools, key string) (actor.AdaptiveStats, bool) {
	if p := t.Lookup(key); p != nil {
		return p.Pool.Stats(), true
	}
	return actor.AdaptiveStats{}, false
}

// done ends pm with o, and adds a success's time since start to p's
// average: only a success's, as a refusal's time says nothing of the
// work.
func done(p *keyPool, pm permits.Permit, o actor.Outcome, start time.Time) {
	if o == actor.Success {
		p.Observe(time.Since(start))
	}
	p.Pool.Done(pm, o)
}
