package retry_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

type rdHint struct{ d time.Duration }

func (h rdHint) Error() string                     { return "hint" }
func (h rdHint) RetryAfter() (time.Duration, bool) { return h.d, true }

// TestHostileOptions
func TestHostileOptions(t *testing.T) {
	bad := []retry.Option{
		nil,
		retry.WithMaxAttempts(0), retry.WithMaxAttempts(-1), retry.WithMaxAttempts(math.MinInt),
		retry.WithBackoff(-1, 0), retry.WithBackoff(2, 1), retry.WithBackoff(math.MinInt64, math.MinInt64),
		retry.WithMaxElapsed(-1), retry.WithMaxElapsed(math.MinInt64),
		retry.WithClassifier(nil),
	}
	for i, o := range bad {
		if _, err := retry.New(o); !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("bad option %d: New = %v", i, err)
		}
		ran := false
		if err := retry.Do(context.Background(), func(context.Context) error { ran = true; return nil }, o); !errors.Is(err, permits.ErrInvalidConfig) || ran {
			t.Errorf("bad option %d: Do = %v, ran %v", i, err, ran)
		}
	}
	good := [][]retry.Option{
		{retry.WithMaxAttempts(math.MaxInt), retry.WithBackoff(0, 0)},
		{retry.WithBackoff(math.MaxInt64, math.MaxInt64)},
		{retry.WithMaxElapsed(math.MaxInt64)},
		{retry.WithMaxElapsed(0)},
		{retry.WithOnRetry(nil), retry.WithBudget(nil), retry.WithJitterSeed(math.MaxUint64)},
	}
	for i, opts := range good {
		if _, err := retry.New(opts...); err != nil {
			t.Errorf("good options %d: %v", i, err)
		}
	}
}

// TestHostileHugeWaits: backoffs and hints that overflow never make Do
// sleep for ever past ctx's deadline, nor panic.
func TestHostileHugeWaits(t *testing.T) {
	cases := []struct {
		name string
		opts []retry.Option
		err  error
	}{
		{"huge backoff", []retry.Option{retry.WithBackoff(math.MaxInt64, math.MaxInt64), retry.WithMaxAttempts(100)}, errors.New("x")},
		{"huge backoff many attempts no elapsed", []retry.Option{retry.WithBackoff(time.Nanosecond, math.MaxInt64), retry.WithMaxAttempts(200), retry.WithMaxElapsed(0)}, errors.New("x")},
		{"huge hint", []retry.Option{retry.WithMaxElapsed(0)}, rdHint{math.MaxInt64}},
		{"negative hint", []retry.Option{retry.WithBackoff(0, 0), retry.WithMaxAttempts(3)}, rdHint{math.MinInt64}},
		{"rate limit hint", []retry.Option{retry.WithMaxElapsed(math.MaxInt64)}, permits.RetryLater(math.MaxInt64)},
		{"breaker hint", []retry.Option{}, &breaker.OpenError{RetryAfter: math.MaxInt64}},
	}
	for _, c := range cases {
		// In a bubble, so that "returns by the deadline" is exact: the
		// bound is the deadline itself, not a guess at this machine's speed.
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := retry.Do(ctx, func(context.Context) error { return c.err }, c.opts...)
			el := time.Since(start)
			if err == nil {
				t.Errorf("%s: nil error", c.name)
			}
			var re *retry.Error
			if !errors.As(err, &re) {
				t.Errorf("%s: %v is not *retry.Error", c.name, err)
			} else if re.Wait < 0 {
				t.Errorf("%s: Wait %v < 0", c.name, re.Wait)
			}
			if el > 300*time.Millisecond {
				t.Errorf("%s: took %v with a 300ms deadline", c.name, el)
			}
		})
	}
	if d, ok := retry.Hint(rdHint{math.MinInt64}); !ok || d != 0 {
		t.Errorf("Hint(negative) = %v, %v; want 0, true", d, ok)
	}
	if d, ok := retry.Hint(nil); ok || d != 0 {
		t.Errorf("Hint(nil) = %v %v", d, ok)
	}
}

// TestHostileBudgetExhausted: a zero budget refuses retries with the sentinel.
func TestHostileBudgetExhausted(t *testing.T) {
	b, err := budget.New(budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0), budget.WithName("zero"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = retry.Do(context.Background(), func(context.Context) error { n++; return errors.New("x") }, retry.WithBudget(b), retry.WithBackoff(0, 0))
	var re *retry.Error
	if !errors.Is(err, retry.ErrBudgetExhausted) || !errors.As(err, &re) || re.Budget != "zero" || n != 1 {
		t.Errorf("Do with empty budget = %v (attempts %d)", err, n)
	}
}

// TestHostileCtx: done contexts; a nil fn.
func TestHostileCtx(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	if err := retry.Do(ctx, func(context.Context) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
		t.Errorf("Do(cancelled) = %v, ran %v", err, ran)
	}
	dctx, dcancel := context.WithDeadline(context.Background(), time.Time{})
	defer dcancel()
	if err := retry.Do(dctx, func(context.Context) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do(past deadline) = %v", err)
	}
	if retry.MarkPermanent(nil) != nil {
		t.Error("MarkPermanent(nil) != nil")
	}
}
