package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/retry"
)

// The retry loop's overhead on a first attempt that succeeds, in the same
// run as the breakers it wraps. Goal: ≤ 50 ns beyond calling fn directly,
// 0 allocs. The baseline sub-benchmark runs first; each sluice retry one
// after it reports "overhead-ns", its ns/op minus the baseline's:
//
//	go test -run '^$' -bench Retry -benchmem -count 5 ./...
//	benchstat -col /impl new.txt

func retrySucceed(context.Context) error { return nil }

func mustRetry(b *testing.B, opts ...retry.Option) *retry.Policy {
	p, err := retry.New(opts...)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkRetryFirstAttempt(b *testing.B) {
	ctx := context.Background()
	var baseline float64
	run := func(name string, overhead bool, call func()) {
		b.Run("impl="+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if !overhead {
				return
			}
			b.ReportMetric(ns-baseline, "overhead-ns")
		})
	}
	b.Run("impl=direct", func(b *testing.B) {
		fn := retrySucceed
		for b.Loop() {
			_ = fn(ctx)
		}
		baseline = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	p := mustRetry(b, retry.WithMaxAttempts(5), retry.WithBackoff(time.Millisecond, time.Second))
	run("sluice-policy", true, func() { _ = p.Do(ctx, retrySucceed) })
	run("sluice-do", true, func() { _ = retry.Do(ctx, retrySucceed) })
	opts := []retry.Option{retry.WithMaxAttempts(5), retry.WithBackoff(time.Millisecond, time.Second), retry.WithMaxElapsed(time.Second)}
	run("sluice-do-3-options", true, func() { _ = retry.Do(ctx, retrySucceed, opts...) })
	rb, err := budget.New()
	if err != nil {
		b.Fatal(err)
	}
	pb := mustRetry(b, retry.WithBudget(rb))
	run("sluice-policy-budget", true, func() { _ = pb.Do(ctx, retrySucceed) })
	br := mustBreaker(b)
	attempt := func(ctx context.Context) error { return br.Do(ctx, retrySucceed) }
	run("sluice-breaker", false, func() { _ = br.Do(ctx, retrySucceed) })
	run("sluice-policy-breaker", true, func() { _ = p.Do(ctx, attempt) })
	cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{})
	run("gobreaker", false, func() {
		_, _ = cb.Execute(func() (struct{}, error) { return struct{}{}, nil })
	})
}

// BenchmarkRetryOneRetry: a call that fails once and succeeds on an
// immediate retry (no back-off): the cost of the retry path, two clock
// reads, the classifier and Hint included.
func BenchmarkRetryOneRetry(b *testing.B) {
	ctx := context.Background()
	p := mustRetry(b, retry.WithBackoff(0, 0))
	failed := false
	fn := func(context.Context) error {
		if failed = !failed; failed {
			return errBreakerBench
		}
		return nil
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = p.Do(ctx, fn)
	}
}
