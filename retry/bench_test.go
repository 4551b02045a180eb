package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/retry"
)

func succeed(context.Context) error { return nil }

// BenchmarkBaseline calls fn directly: what a retry loop adds is measured
// against it.
func BenchmarkBaseline(b *testing.B) {
	fn := succeed
	for b.Loop() {
		_ = fn(ctx)
	}
}

// BenchmarkFirstAttempt is the overhead of a first attempt that succeeds
// (goal: <= 50 ns, 0 allocs), in each form of the call.
func BenchmarkFirstAttempt(b *testing.B) {
	p := mustPolicy(b, retry.WithMaxAttempts(5), retry.WithBackoff(time.Millisecond, time.Second))
	b.Run("form=Policy.Do", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Do(ctx, succeed)
		}
	})
	b.Run("form=Do", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = retry.Do(ctx, succeed)
		}
	})
	b.Run("form=Do+3options", func(b *testing.B) {
		b.ReportAllocs()
		attempts, backoff, elapsed := retry.WithMaxAttempts(5), retry.WithBackoff(time.Millisecond, time.Second), retry.WithMaxElapsed(time.Second)
		for b.Loop() {
			_ = retry.Do(ctx, succeed, attempts, backoff, elapsed)
		}
	})
	rb, err := budget.New()
	if err != nil {
		b.Fatal(err)
	}
	pb := mustPolicy(b, retry.WithBudget(rb))
	b.Run("form=Policy.Do+budget", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = pb.Do(ctx, succeed)
		}
	})
}

// BenchmarkOneRetry is a call that fails once and succeeds on the retry,
// with no wait: the cost of the retry path itself (clock reads, the
// classifier, Hint).
func BenchmarkOneRetry(b *testing.B) {
	p := mustPolicy(b, retry.WithBackoff(0, 0))
	b.ReportAllocs()
	failed := false
	fn := func(context.Context) error {
		if failed = !failed; failed {
			return errBoom
		}
		return nil
	}
	for b.Loop() {
		_ = p.Do(ctx, fn)
	}
}
