package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/sluicehq/sluice/bench/internal/scenario"
	"github.com/sluicehq/sluice/breaker"
)

func init() { breakerSection = measureBreaker }

func measureBreaker(r *runner, b *strings.Builder) {
	b.WriteString("## Circuit breaker\n\n")
	fmt.Fprintf(b, "ns per call through a closed breaker with default settings: sluice `Do(ctx, fn)` vs gobreaker `Execute(fn)`. "+
		"*Half failing*: every other call fails, so both keep counting without tripping. Goal: sluice ≤ %.1f× gobreaker.\n\n", goalBreaker)
	t := table{header: []string{"calls", "goroutines", "sluice breaker.Do", "gobreaker Execute", "sluice ÷ gobreaker", "goal met"}}
	for _, failing := range []bool{false, true} {
		name := "succeeding"
		if failing {
			name = "half failing"
		}
		for _, g := range []int{1, 2, 32} {
			m := r.micros("breaker "+name, g, scenario.Breaker(failing))
			met := "–"
			if m[0].ok && m[1].ok {
				met = yesNo(m[0].ns <= goalBreaker*m[1].ns)
			}
			t.add(name, fmt.Sprint(g), m[0].cell(), m[1].cell(), ratio(m[0].ns, m[1].ns), met)
		}
	}
	t.write(b)

	b.WriteString("Other paths, one goroutine. *Rate mode*: a 10s window of ten buckets on both sides (gobreaker: `Interval` 10s, `BucketPeriod` 1s), " +
		"every other call failing, tripping at 60% of at least 20 calls, which neither reaches. *Slow-call threshold*: sluice times each call " +
		"(two monotonic clock reads; gobreaker has no such option, its row is the plain `Execute`). *Open*: a call refused by an open breaker; " +
		"sluice returns an `*OpenError` carrying the breaker's name and RetryAfter, gobreaker a sentinel.\n\n")
	t = table{header: []string{"path", "sluice breaker.Do", "gobreaker Execute", "sluice ÷ gobreaker"}}
	for _, p := range breakerPaths() {
		m := r.micros("breaker "+p.name, 1, p.subjects)
		t.add(p.name, m[0].cell(), m[1].cell(), ratio(m[0].ns, m[1].ns))
	}
	t.write(b)

	b.WriteString("Live heap per breaker (10 000 of them, after a GC), in the configurations that allocate differently: " +
		"sluice allocates its rate window and its hook queue only for the breakers that use them.\n\n")
	t = table{header: []string{"breaker", "heap per breaker"}}
	for _, s := range breakerSizes() {
		var sizes []float64
		for range r.cfg.count {
			v, err := heapPer(10_000, s.make)
			if err != nil {
				r.fail(fmt.Errorf("breaker bytes, %s: %w", s.name, err))
				break
			}
			sizes = append(sizes, v)
		}
		if len(sizes) > 0 {
			r.logf("breaker bytes, %s: %.0f B", s.name, median(sizes))
			t.add(s.name, fmt.Sprintf("%.0f B", median(sizes)))
		}
	}
	t.write(b)
}

type breakerPath struct {
	name     string
	subjects []scenario.Micro
}

var errBreakerCompare = errors.New("compare: failed call")

// breakerSubject returns a subject that calls Do on the breaker newBreaker
// makes, every other call failing when failing is set.
func breakerSubject(name string, failing bool, newBreaker func() (*breaker.Breaker, error)) scenario.Micro {
	return scenario.Micro{Name: name, New: func() (func(int), func(), error) {
		br, err := newBreaker()
		if err != nil {
			return nil, nil, err
		}
		ctx := context.Background()
		return func(n int) {
			for i := range n {
				var err error
				if failing && i%2 == 1 {
					err = errBreakerCompare
				}
				_ = br.Do(ctx, func(context.Context) error { return err })
			}
		}, func() {}, nil
	}}
}

// gobreakerSubject is breakerSubject for gobreaker's Execute.
func gobreakerSubject(name string, failing bool, st gobreaker.Settings, prime bool) scenario.Micro {
	return scenario.Micro{Name: name, New: func() (func(int), func(), error) {
		cb := gobreaker.NewCircuitBreaker[struct{}](st)
		if prime {
			_, _ = cb.Execute(func() (struct{}, error) { return struct{}{}, errBreakerCompare })
		}
		return func(n int) {
			for i := range n {
				var err error
				if failing && i%2 == 1 {
					err = errBreakerCompare
				}
				_, _ = cb.Execute(func() (struct{}, error) { return struct{}{}, err })
			}
		}, func() {}, nil
	}}
}

func breakerPaths() []breakerPath {
	rateTrip := func(c gobreaker.Counts) bool {
		return c.Requests >= 20 && float64(c.TotalFailures)/float64(c.Requests) >= 0.6
	}
	return []breakerPath{
		{"rate mode, half failing", []scenario.Micro{
			breakerSubject("sluice rate mode", true, func() (*breaker.Breaker, error) {
				return breaker.New(breaker.WithFailureRate(0.6, 10*time.Second, 20))
			}),
			gobreakerSubject("gobreaker buckets", true, gobreaker.Settings{Interval: 10 * time.Second, BucketPeriod: time.Second, ReadyToTrip: rateTrip}, false),
		}},
		{"slow-call threshold, succeeding", []scenario.Micro{
			breakerSubject("sluice slow threshold", false, func() (*breaker.Breaker, error) {
				return breaker.New(breaker.WithSlowCallThreshold(time.Second))
			}),
			gobreakerSubject("gobreaker default", false, gobreaker.Settings{}, false),
		}},
		{"open (refused)", []scenario.Micro{
			breakerSubject("sluice open", false, func() (*breaker.Breaker, error) {
				br, err := breaker.New(breaker.WithName("bench"), breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Hour))
				if err == nil {
					_ = br.Do(context.Background(), func(context.Context) error { return errBreakerCompare })
				}
				return br, err
			}),
			gobreakerSubject("gobreaker open", false, gobreaker.Settings{Timeout: time.Hour, ReadyToTrip: func(gobreaker.Counts) bool { return true }}, true),
		}},
	}
}

type breakerSize struct {
	name string
	make func() (any, error)
}

func breakerSizes() []breakerSize {
	sluice := func(opts ...breaker.Option) func() (any, error) {
		return func() (any, error) { return breaker.New(opts...) }
	}
	gb := func(st gobreaker.Settings) func() (any, error) {
		return func() (any, error) { return gobreaker.NewCircuitBreaker[struct{}](st), nil }
	}
	return []breakerSize{
		{"sluice, count mode (`breaker.New()`)", sluice()},
		{"sluice, rate mode (10s window)", sluice(breaker.WithFailureRate(0.5, 10*time.Second, 20))},
		{"sluice, count mode with a hook", sluice(breaker.WithOnTransition(func(breaker.Transition) {}))},
		{"gobreaker, default settings", gb(gobreaker.Settings{})},
		{"gobreaker, 10 buckets (`Interval` 10s, `BucketPeriod` 1s)", gb(gobreaker.Settings{Interval: 10 * time.Second, BucketPeriod: time.Second})},
	}
}

// heapPer returns the live heap that each of n values made by mk holds.
func heapPer(n int, mk func() (any, error)) (float64, error) {
	keep := make([]any, n)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for i := range keep {
		v, err := mk()
		if err != nil {
			return 0, err
		}
		keep[i] = v
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(keep)
	return (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / float64(n), nil
}
