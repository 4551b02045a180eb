package bench_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/sluicehq/sluice/breaker"
)

// The circuit breaker side by side with sony/gobreaker v2, in the same run:
// sluice's Do against gobreaker's Execute, Allow against the two-step
// breaker's Allow. Goal: sluice ≤ 1.0× gobreaker, 0 allocs on Do. Each
// gobreaker sub-benchmark runs first, and the sluice one after it reports
// its ns/op as a ratio of gobreaker's ("x-gobreaker"). Sub-benchmarks are
// named key=value for benchstat:
//
//	go test -run '^$' -bench Breaker -benchmem -count 5 ./... > new.txt
//	benchstat -col /impl new.txt

// neverTrips is a consecutive-failure threshold that alternating outcomes
// cannot reach.
const neverTrips = 1 << 30

var (
	breakerBenchCtx = context.Background()
	errBreakerBench = errors.New("bench: failed call")
)

// breakerOutcome is the error of call i: with failing, every other call of
// each goroutine fails, so that both breakers keep counting failures.
// Interleaved goroutines can still produce a run of failures, so the
// benchmarks that fail set thresholds no run can reach (neverTrips).
func breakerOutcome(failing bool, i int) error {
	if failing && i%2 == 1 {
		return errBreakerBench
	}
	return nil
}

// breakerPair runs the gobreaker body and then the sluice body as
// sub-benchmarks under prefix, and reports sluice's ns/op over gobreaker's.
// Each body gets its goroutines' call counter so that it can vary outcomes.
func breakerPair(b *testing.B, prefix string, g int, gobreakerBody, sluiceBody func() func(i int)) {
	var gobreakerNs float64
	b.Run(prefix+"impl=gobreaker", func(b *testing.B) {
		breakerRun(b, g, gobreakerBody())
		gobreakerNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run(prefix+"impl=sluice", func(b *testing.B) {
		breakerRun(b, g, sluiceBody())
		if gobreakerNs > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/gobreakerNs, "x-gobreaker")
		}
	})
}

// breakerRun runs body b.N times on g goroutines, each counting its own
// calls.
func breakerRun(b *testing.B, g int, body func(i int)) {
	b.ReportAllocs()
	if g == 1 {
		i := 0
		for b.Loop() {
			body(i)
			i++
		}
		return
	}
	b.SetParallelism(max(1, g/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			body(i)
			i++
		}
	})
}

func mustBreaker(b *testing.B, opts ...breaker.Option) *breaker.Breaker {
	br, err := breaker.New(opts...)
	if err != nil {
		b.Fatal(err)
	}
	return br
}

// BenchmarkBreakerDo: a call through a closed breaker in count mode, all
// succeeding (default settings) or every other one failing (a threshold
// neither reaches), on 1 and 32 goroutines.
func BenchmarkBreakerDo(b *testing.B) {
	for _, g := range []int{1, 32} {
		for _, failing := range []bool{false, true} {
			calls := map[bool]string{false: "success", true: "mixed"}[failing]
			breakerPair(b, fmt.Sprintf("calls=%s/goroutines=%d/", calls, g), g,
				func() func(int) {
					var st gobreaker.Settings
					if failing {
						st.ReadyToTrip = func(c gobreaker.Counts) bool { return c.ConsecutiveFailures > neverTrips }
					}
					cb := gobreaker.NewCircuitBreaker[struct{}](st)
					return func(i int) {
						err := breakerOutcome(failing, i)
						_, _ = cb.Execute(func() (struct{}, error) { return struct{}{}, err })
					}
				},
				func() func(int) {
					br := mustBreaker(b)
					if failing {
						br = mustBreaker(b, breaker.WithConsecutiveFailures(neverTrips))
					}
					return func(i int) {
						err := breakerOutcome(failing, i)
						_ = br.Do(breakerBenchCtx, func(context.Context) error { return err })
					}
				})
		}
	}
}

// BenchmarkBreakerRateMode: the same in rate mode over a 10s window of ten
// buckets on both sides (gobreaker: Interval 10s, BucketPeriod 1s), every
// other call failing, tripping at 60% of at least 20 calls, which neither
// reaches.
func BenchmarkBreakerRateMode(b *testing.B) {
	for _, g := range []int{1, 32} {
		breakerPair(b, fmt.Sprintf("goroutines=%d/", g), g,
			func() func(int) {
				cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
					Interval:     10 * time.Second,
					BucketPeriod: time.Second,
					ReadyToTrip: func(c gobreaker.Counts) bool {
						return c.Requests >= 20 && float64(c.TotalFailures)/float64(c.Requests) >= 0.6
					},
				})
				return func(i int) {
					err := breakerOutcome(true, i)
					_, _ = cb.Execute(func() (struct{}, error) { return struct{}{}, err })
				}
			},
			func() func(int) {
				br := mustBreaker(b, breaker.WithFailureRate(0.6, 10*time.Second, 20))
				return func(i int) {
					err := breakerOutcome(true, i)
					_ = br.Do(breakerBenchCtx, func(context.Context) error { return err })
				}
			})
	}
}

// BenchmarkBreakerAllow: the two-step form, Allow then done.
func BenchmarkBreakerAllow(b *testing.B) {
	breakerPair(b, "goroutines=1/", 1,
		func() func(int) {
			cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{})
			return func(int) {
				done, err := cb.Allow()
				if err == nil {
					done(nil)
				}
			}
		},
		func() func(int) {
			br := mustBreaker(b)
			return func(int) {
				done, err := br.Allow()
				if err == nil {
					done(nil)
				}
			}
		})
}

// BenchmarkBreakerOpen: a call refused by an open breaker. sluice returns an
// *OpenError carrying RetryAfter (one small allocation); gobreaker returns a
// sentinel.
func BenchmarkBreakerOpen(b *testing.B) {
	breakerPair(b, "goroutines=1/", 1,
		func() func(int) {
			cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
				Timeout:     time.Hour,
				ReadyToTrip: func(gobreaker.Counts) bool { return true },
			})
			_, _ = cb.Execute(func() (struct{}, error) { return struct{}{}, errBreakerBench })
			return func(int) {
				_, _ = cb.Execute(func() (struct{}, error) { return struct{}{}, nil })
			}
		},
		func() func(int) {
			br := mustBreaker(b, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Hour))
			_ = br.Do(breakerBenchCtx, func(context.Context) error { return errBreakerBench })
			return func(int) {
				_ = br.Do(breakerBenchCtx, func(context.Context) error { return nil })
			}
		})
}

// BenchmarkBreakerSlowThreshold: a closed breaker in count mode that times
// every call (WithSlowCallThreshold: two monotonic clock reads), against
// gobreaker's plain Execute, which has no such option.
func BenchmarkBreakerSlowThreshold(b *testing.B) {
	breakerPair(b, "goroutines=1/", 1,
		func() func(int) {
			cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{})
			return func(int) {
				_, _ = cb.Execute(func() (struct{}, error) { return struct{}{}, nil })
			}
		},
		func() func(int) {
			br := mustBreaker(b, breaker.WithSlowCallThreshold(time.Second))
			return func(int) {
				_ = br.Do(breakerBenchCtx, func(context.Context) error { return nil })
			}
		})
}

// BenchmarkBreakerMemory reports the live heap per breaker across 10 000
// of them: sluice in count mode (the default), in rate mode and with a
// hook (the window and the hook queue are allocated only when used), and
// gobreaker with default settings and with ten buckets. One op builds all
// of it once.
func BenchmarkBreakerMemory(b *testing.B) {
	const n = 10_000
	per := func(mk func() any) float64 {
		keep := make([]any, n)
		before := heapLive()
		for i := range keep {
			keep[i] = mk()
		}
		v := float64(heapLive()-before) / n
		runtime.KeepAlive(keep)
		return v
	}
	var count, rate, hook, gbDefault, gbBuckets float64
	for b.Loop() {
		count = per(func() any { return mustBreaker(b) })
		rate = per(func() any { return mustBreaker(b, breaker.WithFailureRate(0.5, 10*time.Second, 20)) })
		hook = per(func() any { return mustBreaker(b, breaker.WithOnTransition(func(breaker.Transition) {})) })
		gbDefault = per(func() any { return gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{}) })
		gbBuckets = per(func() any {
			return gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{Interval: 10 * time.Second, BucketPeriod: time.Second})
		})
	}
	b.ReportMetric(count, "heap-B/breaker")
	b.ReportMetric(rate, "heap-B/breaker-rate-mode")
	b.ReportMetric(hook, "heap-B/breaker-with-hook")
	b.ReportMetric(gbDefault, "gobreaker-heap-B/breaker")
	b.ReportMetric(gbBuckets, "gobreaker-heap-B/breaker-10-buckets")
	b.ReportMetric(0, "ns/op")
}
