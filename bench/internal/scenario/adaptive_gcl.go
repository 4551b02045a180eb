package scenario

import (
	"context"
	"time"

	"github.com/platinummonkey/go-concurrency-limits/core"
	"github.com/platinummonkey/go-concurrency-limits/limit"
	"github.com/platinummonkey/go-concurrency-limits/limiter"
	"github.com/platinummonkey/go-concurrency-limits/strategy"
)

// gclWindow is the sample window of go-concurrency-limits' DefaultLimiter
// here: its default is 1 s (one decision a second, as failsafe-go's
// default); 20 ms, about two RTTs of the model, is how often sluice's
// controllers decide. Its other parameters are its defaults: at least 100
// samples a window, RTTs under 100 µs ignored.
const gclWindow = int64(20 * time.Millisecond)

// gclSubjects returns platinummonkey/go-concurrency-limits' DefaultLimiter
// (non-blocking, as a server shedding load uses it) with its AIMD, Vegas
// and Gradient2 limits, each from the shared initial limit and, where the
// limit takes one, ceiling.
func gclSubjects() []AdaptiveSubject {
	reg := core.EmptyMetricRegistryInstance
	log := limit.NoopLimitLogger{}
	mk := func(l func() core.Limit) func() (AdaptiveLimiter, error) {
		return func() (AdaptiveLimiter, error) {
			d, err := limiter.NewDefaultLimiter(l(), gclWindow, gclWindow, int64(100*time.Microsecond), 100,
				strategy.NewSimpleStrategy(adInitial), log, reg)
			if err != nil {
				return nil, err
			}
			return gclAdaptive{d}, nil
		}
	}
	return []AdaptiveSubject{
		{"go-concurrency-limits AIMD", "AIMD", mk(func() core.Limit {
			return limit.NewAIMDLimit("aimd", adInitial, 0.9, 1, reg)
		})},
		{"go-concurrency-limits Vegas", "Vegas", mk(func() core.Limit {
			return limit.NewVegasLimitWithRegistry("vegas", adInitial, nil, adCeiling, -1, nil, nil, nil, nil, nil, -1, log, reg)
		})},
		{"go-concurrency-limits Gradient2", "Gradient2", mk(func() core.Limit {
			l, _ := limit.NewGradient2Limit("gradient2", adInitial, adCeiling, adFloor,
				func(int) int { return 4 }, 0.2, 600, log, reg)
			return l
		})},
	}
}

// gclAdaptive ends a refused request with OnDropped, the library's load
// signal, and a served one with OnSuccess, which measures its RTT.
type gclAdaptive struct{ l *limiter.DefaultLimiter }

func (g gclAdaptive) TryAcquire() (func(bool), bool) {
	ln, ok := g.l.Acquire(context.Background())
	if !ok {
		return nil, false
	}
	return func(overload bool) {
		if overload {
			ln.OnDropped()
			return
		}
		ln.OnSuccess()
	}, true
}

func (g gclAdaptive) Limit() int { return g.l.EstimatedLimit() }
func (g gclAdaptive) Close()     {}

// gclCost is a DefaultLimiter with a Vegas limit of PoolSize, for the
// cost of Acquire plus OnSuccess.
func gclCost() (*limiter.DefaultLimiter, error) {
	reg, log := core.EmptyMetricRegistryInstance, limit.NoopLimitLogger{}
	l := limit.NewVegasLimitWithRegistry("vegas", PoolSize, nil, PoolSize, -1, nil, nil, nil, nil, nil, -1, log, reg)
	return limiter.NewDefaultLimiter(l, gclWindow, gclWindow, int64(100*time.Microsecond), 100,
		strategy.NewSimpleStrategy(PoolSize), log, reg)
}
