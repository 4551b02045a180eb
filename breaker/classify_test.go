package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/breaker"
)

var (
	errQuota    = errors.New("429 too many requests")
	errNotFound = errors.New("404 not found")
)

// classifier treats a 429 as Ignored (a quota says nothing about the
// downstream's health), a 404 as a Success, and the rest as the default
// does.
func classifier(err error) breaker.Outcome {
	switch {
	case errors.Is(err, errQuota):
		return breaker.Ignored
	case errors.Is(err, errNotFound):
		return breaker.Success
	}
	return breaker.DefaultClassifier(err)
}

func returning(err error) func(context.Context) error {
	return func(context.Context) error { return err }
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[breaker.Outcome]string{
		breaker.Success: "success", breaker.Failure: "failure", breaker.Ignored: "ignored", 9: "Outcome(9)",
	} {
		if got := o.String(); got != want {
			t.Errorf("%d: %q, want %q", int(o), got, want)
		}
	}
}

func TestDefaultClassifier(t *testing.T) {
	for err, want := range map[error]breaker.Outcome{
		errBoom:                                  breaker.Failure,
		context.DeadlineExceeded:                 breaker.Failure,
		context.Canceled:                         breaker.Ignored,
		fmt.Errorf("call: %w", context.Canceled): breaker.Ignored,
	} {
		if got := breaker.DefaultClassifier(err); got != want {
			t.Errorf("%v: %v, want %v", err, got, want)
		}
	}
}

// In count mode an Ignored outcome neither resets nor adds to the
// consecutive failures; a Success does reset them.
func TestClassifierCountMode(t *testing.T) {
	b := mustNew(t, breaker.WithConsecutiveFailures(2), breaker.WithClassifier(classifier))
	b.Do(ctx, fail)
	for range 10 {
		b.Do(ctx, returning(errQuota))
	}
	if s := b.Snapshot(); s.ConsecutiveFailures != 1 || s.Calls != 1 || s.Failures != 1 {
		t.Fatalf("after a failure and ten 429s: %+v", s)
	}
	b.Do(ctx, returning(errNotFound)) // a success: resets
	b.Do(ctx, fail)
	wantState(t, b, breaker.Closed)
	b.Do(ctx, returning(errQuota))
	b.Do(ctx, fail)
	wantState(t, b, breaker.Open)
}

// In rate mode an Ignored outcome is not a call.
func TestClassifierRateMode(t *testing.T) {
	b := mustNew(t, breaker.WithFailureRate(0.5, time.Minute, 4), breaker.WithClassifier(classifier))
	b.Do(ctx, fail)
	b.Do(ctx, succeed)
	for range 100 {
		b.Do(ctx, returning(errQuota))
	}
	b.Do(ctx, returning(errNotFound))
	if s := b.Snapshot(); s.Calls != 3 || s.Failures != 1 {
		t.Fatalf("calls %d, failures %d; want 3 and 1", s.Calls, s.Failures)
	}
	b.Do(ctx, fail) // 2 of 4
	wantState(t, b, breaker.Open)
}

// A probe that ends Ignored frees its slot without closing the breaker.
func TestClassifierIgnoredProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := probing(t, breaker.WithClassifier(classifier))
		for range 3 {
			if err := b.Do(ctx, returning(errQuota)); err != errQuota {
				t.Fatalf("probe: %v, want it to run", err)
			}
			wantState(t, b, breaker.HalfOpen)
		}
		b.Do(ctx, succeed)
		wantState(t, b, breaker.Closed)
	})
}

// An outcome outside the three counts as a Failure.
func TestClassifierOutOfRange(t *testing.T) {
	b := mustNew(t, breaker.WithConsecutiveFailures(1),
		breaker.WithClassifier(func(error) breaker.Outcome { return 42 }))
	b.Do(ctx, fail)
	wantState(t, b, breaker.Open)
}

// Of WithIsFailure and WithClassifier, the last one wins.
func TestClassifierLastOptionWins(t *testing.T) {
	never := breaker.WithIsFailure(func(error) bool { return false })
	always := breaker.WithClassifier(func(error) breaker.Outcome { return breaker.Failure })
	b := mustNew(t, breaker.WithConsecutiveFailures(1), always, never)
	b.Do(ctx, fail)
	wantState(t, b, breaker.Closed)
	b = mustNew(t, breaker.WithConsecutiveFailures(1), never, always)
	b.Do(ctx, fail)
	wantState(t, b, breaker.Open)
}

// A call slower than the threshold is a failure in count mode; one exactly
// at the threshold is not, and an Ignored call stays Ignored however slow.
func TestSlowCallsCountMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const threshold = 100 * time.Millisecond
		taking := func(d time.Duration, err error) func(context.Context) error {
			return func(context.Context) error { time.Sleep(d); return err }
		}
		b := mustNew(t, breaker.WithConsecutiveFailures(3), breaker.WithSlowCallThreshold(threshold))
		b.Do(ctx, taking(threshold+time.Nanosecond, nil))
		b.Do(ctx, taking(time.Hour, context.Canceled)) // ignored
		b.Do(ctx, taking(threshold+time.Second, nil))
		if s := b.Snapshot(); s.ConsecutiveFailures != 2 || s.SlowCalls != 2 || s.Failures != 2 || s.Calls != 2 {
			t.Fatalf("after two slow successes and a slow cancellation: %+v", s)
		}
		b.Do(ctx, taking(threshold, nil)) // not slower than the threshold: resets
		wantState(t, b, breaker.Closed)
		b.Do(ctx, taking(time.Second, errBoom)) // a slow failure is one failure
		b.Do(ctx, taking(time.Second, nil))
		if s := b.Snapshot(); s.ConsecutiveFailures != 2 || s.SlowCalls != 4 || s.Failures != 4 {
			t.Fatalf("after a slow failure and a slow success: %+v", s)
		}
		b.Do(ctx, taking(time.Second, nil))
		wantState(t, b, breaker.Open)
	})
}

// In rate mode slow calls are failures in the window.
func TestSlowCallsRateMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithFailureRate(0.5, 10*time.Second, 4), breaker.WithSlowCallThreshold(50*time.Millisecond))
		slow := func(context.Context) error { time.Sleep(time.Second); return nil }
		b.Do(ctx, succeed)
		b.Do(ctx, slow)
		b.Do(ctx, succeed)
		if s := b.Snapshot(); s.Calls != 3 || s.Failures != 1 || s.SlowCalls != 1 {
			t.Fatalf("%+v", s)
		}
		b.Do(ctx, slow) // 2 of 4
		wantState(t, b, breaker.Open)
	})
}

// Through Allow a call is timed from admission to done, and a slow probe
// reopens the breaker.
func TestSlowCallsThroughAllow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second),
			breaker.WithSlowCallThreshold(time.Second))
		done, _ := b.Allow()
		time.Sleep(time.Second)
		done(nil) // at the threshold: a success
		wantState(t, b, breaker.Closed)
		done, _ = b.Allow()
		time.Sleep(2 * time.Second)
		done(nil)
		wantState(t, b, breaker.Open)
		time.Sleep(time.Second)
		done, _ = b.Allow()
		time.Sleep(2 * time.Second)
		done(nil) // a slow probe
		wantState(t, b, breaker.Open)
	})
}
