package scenario

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"go.uber.org/ratelimit"
	"golang.org/x/time/rate"
)

// Decision settings: Allowed admits far more than any loop can ask for, so
// every call is allowed; Denied admits the first call of a run and denies
// every later one.
var (
	AllowedRate, AllowedBurst = algorithms.PerSecond(1_000_000_000), int64(1000)
	DeniedRate, DeniedBurst   = algorithms.Every(time.Hour), int64(1)
)

// perSecond converts r for the libraries that take a float rate.
func perSecond(r algorithms.Rate) float64 { return float64(r.Count) / r.Per.Seconds() }

// Decision returns the subjects of the non-blocking decision, configured
// with r and burst: sluice's TryAcquire (the lock-free fast path when r's
// emission interval is a whole number of nanoseconds), x/time/rate's AllowN
// and the CAS-on-TAT reference.
func Decision(r algorithms.Rate, burst int64) []Micro {
	return []Micro{
		{Name: "sluice TryAcquire", New: func() (func(int), func(), error) {
			l, err := SluiceGCRA(r, burst)
			if err != nil {
				return nil, nil, err
			}
			return func(n int) {
				for range n {
					_, _ = l.TryAcquire(1)
				}
			}, func() { _ = l.Close() }, nil
		}},
		{Name: "x/time/rate AllowN", New: func() (func(int), func(), error) {
			l := rate.NewLimiter(rate.Limit(perSecond(r)), int(burst))
			return func(n int) {
				for range n {
					l.AllowN(time.Now(), 1)
				}
			}, func() {}, nil
		}},
		{Name: "CAS-on-TAT reference", New: func() (func(int), func(), error) {
			g := NewCASGCRA(r.Per/time.Duration(r.Count), burst)
			return func(n int) {
				for range n {
					g.Allow()
				}
			}, func() {}, nil
		}},
	}
}

// SluiceGCRA returns a sluice limiter owning a GCRA.
func SluiceGCRA(r algorithms.Rate, burst int64, opts ...actor.Option) (*actor.Limiter, error) {
	g, err := algorithms.NewGCRA(r, burst)
	if err != nil {
		return nil, err
	}
	return actor.MustNew(g, opts...), nil
}

// Owner-path settings: rates far above what callers ask for, on
// configurations that have no lock-free form, so that every Acquire is a
// round trip through the owner goroutine and is granted at once. A GCRA
// whose rate has more than 2^30 units per period after reduction keeps its
// exact wide form, for the owner only; a sliding window never has a
// lock-free form (a window of a microsecond keeps few entries).
var (
	OwnerGCRARate   = algorithms.Rate{Count: 3_000_000_001, Per: time.Second}
	OwnerWindowRate = algorithms.Rate{Count: 1 << 40, Per: time.Microsecond}
	OwnerBurst      = int64(1_000_000)
)

// RoundTrip returns the subjects of an Acquire through an owner: sluice
// with a GCRA whose fast path cannot open, sluice with a sliding window, the
// bare mailbox round trip (EchoActor) and, for scale, x/time/rate's WaitN at
// a rate that never makes it wait.
func RoundTrip() []Micro {
	acquire := func(l *actor.Limiter) (func(int), func(), error) {
		ctx := context.Background()
		return func(n int) {
			for range n {
				_, _ = l.Acquire(ctx, 1)
			}
		}, func() { _ = l.Close() }, nil
	}
	return []Micro{
		{Name: "sluice Acquire (GCRA 3,000,000,001/s)", New: func() (func(int), func(), error) {
			// 3,000,000,001/s: no lock-free form.
			l, err := SluiceGCRA(OwnerGCRARate, OwnerBurst)
			if err != nil {
				return nil, nil, err
			}
			return acquire(l)
		}},
		{Name: "sluice Acquire (sliding window)", New: func() (func(int), func(), error) {
			w, err := algorithms.NewSlidingWindow(OwnerWindowRate)
			if err != nil {
				return nil, nil, err
			}
			return acquire(actor.MustNew(w))
		}},
		{Name: "bare mailbox round trip", New: func() (func(int), func(), error) {
			a := NewEchoActor()
			ctx := context.Background()
			return func(n int) {
				for range n {
					_ = a.Acquire(ctx)
				}
			}, a.Close, nil
		}},
		{Name: "x/time/rate WaitN", New: func() (func(int), func(), error) {
			l := rate.NewLimiter(rate.Limit(perSecond(OwnerGCRARate)), int(OwnerBurst))
			ctx := context.Background()
			return func(n int) {
				for range n {
					_ = l.WaitN(ctx, 1)
				}
			}, func() {}, nil
		}},
	}
}

// Waiter is a rate limiter as the waiting scenarios see it.
type Waiter struct {
	Wait  func(ctx context.Context) error
	Close func()
}

// WaiterKind builds one library's Waiter for a rate and a burst.
type WaiterKind struct {
	Name string
	New  func(r algorithms.Rate, burst int64) (Waiter, error)
	// Cancels reports whether Wait honours its context (uber's Take has
	// none).
	Cancels bool
}

// Sluice is sluice's limiter owning a GCRA; Wait is Limiter.Wait.
var Sluice = WaiterKind{Name: "sluice", Cancels: true, New: func(r algorithms.Rate, burst int64) (Waiter, error) {
	l, err := SluiceGCRA(r, burst)
	if err != nil {
		return Waiter{}, err
	}
	return Waiter{Wait: l.Wait, Close: func() { _ = l.Close() }}, nil
}}

// XTime is golang.org/x/time/rate's Limiter; Wait is Limiter.Wait.
var XTime = WaiterKind{Name: "x/time/rate", Cancels: true, New: func(r algorithms.Rate, burst int64) (Waiter, error) {
	l := rate.NewLimiter(rate.Limit(perSecond(r)), int(burst))
	return Waiter{Wait: l.Wait, Close: func() {}}, nil
}}

// Uber is go.uber.org/ratelimit; Wait is Take, which ignores the context.
// Its slack of burst-1 lets burst calls through at once after idling, like
// a burst of burst elsewhere.
var Uber = WaiterKind{Name: "uber ratelimit", New: func(r algorithms.Rate, burst int64) (Waiter, error) {
	l := ratelimit.New(int(r.Count), ratelimit.Per(r.Per), ratelimit.WithSlack(int(burst-1)))
	return Waiter{Wait: func(context.Context) error { l.Take(); return nil }, Close: func() {}}, nil
}}
