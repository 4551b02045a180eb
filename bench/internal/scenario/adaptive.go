package scenario

import (
	"context"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"

	"github.com/sluicehq/sluice/actor"
)

// Limits every adaptive subject starts from and stays within: floor 1,
// initial 20, ceiling 400, the defaults of failsafe-go but for a ceiling
// above the model's capacity.
const (
	adFloor, adInitial, adCeiling = 1, 20, 400
)

// AdaptiveSubject builds one limiter for the model downstream.
type AdaptiveSubject struct {
	Name string // "sluice Vegas", "failsafe-go adaptivelimiter"
	Algo string // the controller, so that the table pairs comparable ones
	New  func() (AdaptiveLimiter, error)
}

// AdaptiveSubjects returns sluice's AdaptivePool with each of its
// controllers and failsafe-go's adaptive limiter (one algorithm: the
// gradient of a recent RTT quantile over a baseline, Vegas-like queue
// thresholds), each with its defaults but for the limits.
// platinummonkey/go-concurrency-limits is not among them: the module
// proxy does not serve it (docs/benchmarks.md).
func AdaptiveSubjects() []AdaptiveSubject {
	pool := func(ctl func() actor.Controller) func() (AdaptiveLimiter, error) {
		return func() (AdaptiveLimiter, error) {
			p, err := actor.NewAdaptivePool(ctl(), actor.WithLimits(adFloor, adInitial, adCeiling))
			if err != nil {
				return nil, err
			}
			return sluiceAdaptive{p}, nil
		}
	}
	return append([]AdaptiveSubject{
		{"sluice AIMD", "AIMD", pool(func() actor.Controller { return &actor.AIMD{} })},
		{"sluice Vegas", "Vegas", pool(func() actor.Controller { return &actor.Vegas{} })},
		{"sluice Gradient2", "Gradient2", pool(func() actor.Controller { return &actor.Gradient2{} })},
		{"failsafe-go adaptivelimiter", "gradient (Vegas-like)", func() (AdaptiveLimiter, error) {
			l := adaptivelimiter.NewBuilder[any]().WithLimits(adFloor, adCeiling, adInitial).Build()
			return failsafeAdaptive{l}, nil
		}},
		// Its recent window lasts at least a second by default, so it
		// decides once a second; this one decides about every 2 RTTs,
		// as sluice's controllers do.
		{"failsafe-go, 20 ms window", "gradient (Vegas-like)", func() (AdaptiveLimiter, error) {
			l := adaptivelimiter.NewBuilder[any]().WithLimits(adFloor, adCeiling, adInitial).
				WithRecentWindow(20*time.Millisecond, time.Second, 50).Build()
			return failsafeAdaptive{l}, nil
		}},
	}, gclSubjects()...)
}

type sluiceAdaptive struct{ p *actor.AdaptivePool }

func (s sluiceAdaptive) TryAcquire() (func(bool), bool) {
	pm, err := s.p.TryAcquire(1)
	if err != nil {
		return nil, false
	}
	return func(overload bool) {
		o := actor.Success
		if overload {
			o = actor.Overload
		}
		s.p.Done(pm, o)
	}, true
}

func (s sluiceAdaptive) Limit() int { return int(s.p.Limit()) }
func (s sluiceAdaptive) Close()     { _ = s.p.Close() }

// failsafeAdaptive ends a refused request with Drop, which failsafe-go
// documents for an execution whose duration must not teach the limiter:
// it has no load signal of its own, and Record would teach it a refusal's
// RTT of 0.
type failsafeAdaptive struct {
	l adaptivelimiter.AdaptiveLimiter[any]
}

func (f failsafeAdaptive) TryAcquire() (func(bool), bool) {
	pm, ok := f.l.TryAcquirePermit()
	if !ok {
		return nil, false
	}
	return func(overload bool) {
		if overload {
			pm.Drop()
			return
		}
		pm.Record()
	}, true
}

func (f failsafeAdaptive) Limit() int { return f.l.Limit() }
func (f failsafeAdaptive) Close()     {}

// AdaptiveCost returns the subjects of Acquire(ctx, 1) then the end of the
// permit with a success, on limits high enough that nobody waits: a plain
// actor.Pool (the baseline), sluice's AdaptivePool (Vegas) ended with
// Done(Success), failsafe-go's adaptive limiter ended with Record, and
// go-concurrency-limits' DefaultLimiter (Vegas) ended with OnSuccess.
func AdaptiveCost() []Micro {
	ctx := context.Background()
	return []Micro{
		Pool()[0],
		{Name: "sluice AdaptivePool", New: func() (func(int), func(), error) {
			p, err := actor.NewAdaptivePool(&actor.Vegas{}, actor.WithLimits(PoolSize, PoolSize, PoolSize))
			if err != nil {
				return nil, nil, err
			}
			return func(n int) {
				for range n {
					if pm, err := p.Acquire(ctx, 1); err == nil {
						p.Done(pm, actor.Success)
					}
				}
			}, func() { _ = p.Close() }, nil
		}},
		{Name: "failsafe-go adaptivelimiter", New: func() (func(int), func(), error) {
			l := adaptivelimiter.NewBuilder[any]().WithLimits(PoolSize, PoolSize, PoolSize).Build()
			return func(n int) {
				for range n {
					if pm, err := l.AcquirePermit(ctx); err == nil {
						pm.Record()
					}
				}
			}, func() {}, nil
		}},
		{Name: "go-concurrency-limits", New: func() (func(int), func(), error) {
			l, err := gclCost()
			if err != nil {
				return nil, nil, err
			}
			return func(n int) {
				for range n {
					if ln, ok := l.Acquire(ctx); ok {
						ln.OnSuccess()
					}
				}
			}, func() {}, nil
		}},
	}
}
