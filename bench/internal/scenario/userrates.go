package scenario

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"golang.org/x/time/rate"
)

// UserRate is a configuration users actually choose, where most calls in a
// tight loop are refused: the fast path has to be fast at refusing.
type UserRate struct {
	Name  string
	Rate  algorithms.Rate
	Burst int64
}

// UserRates are the README's rates: 30 requests per second, 7 per second,
// and 1,140,000 tokens per minute with a burst of 57,000.
var UserRates = []UserRate{
	{"30/s", algorithms.PerSecond(30), 1},
	{"7/s", algorithms.PerSecond(7), 1},
	{"1,140,000/min", algorithms.PerMinute(1_140_000), 57_000},
}

// FastAlgorithms are the algorithms with a lock-free form, by name, each
// configured to admit rate with bursts of burst (the fixed window: burst
// units per burst/rate of time, the same long-run rate).
var FastAlgorithms = []struct {
	Name string
	New  func(r algorithms.Rate, burst int64) (algorithms.Algorithm, error)
}{
	{"GCRA", func(r algorithms.Rate, b int64) (algorithms.Algorithm, error) { return algorithms.NewGCRA(r, b) }},
	{"token bucket", func(r algorithms.Rate, b int64) (algorithms.Algorithm, error) { return algorithms.NewTokenBucket(r, b) }},
	{"leaky bucket", func(r algorithms.Rate, b int64) (algorithms.Algorithm, error) { return algorithms.NewLeakyBucket(r, b) }},
	{"fixed window", func(r algorithms.Rate, b int64) (algorithms.Algorithm, error) {
		return algorithms.NewFixedWindow(algorithms.Rate{Count: b, Per: time.Duration(int64(r.Per) * b / r.Count)})
	}},
}

// AllowAt returns the subjects of a non-blocking decision at a user's rate:
// sluice's Allow and TryAcquire on each algorithm with a lock-free form,
// then x/time/rate's Allow at the same rate and burst, last.
func AllowAt(u UserRate) []Micro {
	var ms []Micro
	for _, try := range []bool{false, true} {
		for _, a := range FastAlgorithms {
			name := "sluice Allow (" + a.Name + ")"
			if try {
				name = "sluice TryAcquire (" + a.Name + ")"
			}
			ms = append(ms, Micro{Name: name, New: func() (func(int), func(), error) {
				alg, err := a.New(u.Rate, u.Burst)
				if err != nil {
					return nil, nil, err
				}
				if g, ok := alg.(algorithms.Gated); !ok || !g.LockFree() {
					return nil, nil, fmt.Errorf("%s at %s has no lock-free form", a.Name, u.Name)
				}
				l := actor.MustNew(alg)
				if try {
					return func(n int) {
						for range n {
							_, _ = l.TryAcquire(1)
						}
					}, func() { _ = l.Close() }, nil
				}
				return func(n int) {
					for range n {
						l.Allow()
					}
				}, func() { _ = l.Close() }, nil
			}})
		}
	}
	ms = append(ms, Micro{Name: "x/time/rate Allow", New: func() (func(int), func(), error) {
		l := rate.NewLimiter(rate.Limit(perSecond(u.Rate)), int(u.Burst))
		return func(n int) {
			for range n {
				l.Allow()
			}
		}, func() {}, nil
	}})
	return ms
}
