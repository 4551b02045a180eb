package breaker_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/permits"
)

func TestHostileBreakerOptions(t *testing.T) {
	bad := []breaker.Option{
		nil,
		breaker.WithConsecutiveFailures(0), breaker.WithConsecutiveFailures(-1), breaker.WithConsecutiveFailures(math.MinInt),
		breaker.WithFailureRate(0, time.Second, 1), breaker.WithFailureRate(-1, time.Second, 1), breaker.WithFailureRate(1.0000001, time.Second, 1),
		breaker.WithFailureRate(math.NaN(), time.Second, 1), breaker.WithFailureRate(math.Inf(1), time.Second, 1),
		breaker.WithFailureRate(0.5, 9, 1), breaker.WithFailureRate(0.5, math.MaxInt64, 1), breaker.WithFailureRate(0.5, -1, 1),
		breaker.WithFailureRate(0.5, time.Second, 0), breaker.WithFailureRate(0.5, time.Second, math.MinInt),
		breaker.WithHalfOpenProbes(0), breaker.WithHalfOpenProbes(-1),
		breaker.WithHalfOpenTimeout(0), breaker.WithHalfOpenTimeout(-1),
		breaker.WithOpenTimeout(0), breaker.WithOpenTimeout(-1), breaker.WithOpenTimeout(math.MinInt64),
		breaker.WithOpenTimeoutGrowth(0.5, time.Hour), breaker.WithOpenTimeoutGrowth(101, time.Hour), breaker.WithOpenTimeoutGrowth(math.NaN(), time.Hour),
		breaker.WithOpenTimeoutGrowth(2, time.Second), // max below the open timeout (30s)
		breaker.WithSlowCallThreshold(-1),
		breaker.WithClassifier(nil), breaker.WithIsFailure(nil),
	}
	for i, o := range bad {
		b, err := breaker.New(o)
		if !errors.Is(err, permits.ErrInvalidConfig) || b != nil {
			t.Errorf("bad option %d: New = %v, %v", i, b, err)
		}
	}
}

// TestHostileBreakerExtremeTimeouts: huge open timeouts and growth never
// overflow into a negative RetryAfter or a breaker that never opens/closes.
func TestHostileBreakerExtremeTimeouts(t *testing.T) {
	b, err := breaker.New(breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(math.MaxInt64),
		breaker.WithOpenTimeoutGrowth(100, math.MaxInt64), breaker.WithHalfOpenTimeout(math.MaxInt64))
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	_ = b.Do(context.Background(), func(context.Context) error { return boom })
	err = b.Do(context.Background(), func(context.Context) error { return nil })
	var oe *breaker.OpenError
	if !errors.As(err, &oe) || !errors.Is(err, breaker.ErrOpen) || oe.RetryAfter <= 0 {
		t.Errorf("open breaker Do = %v (%+v)", err, oe)
	}
	s := b.Snapshot()
	if s.RetryAfter <= 0 || s.OpenTimeout <= 0 {
		t.Errorf("snapshot %+v", s)
	}
	b.ForceOpen()
	_, err = b.Allow()
	if !errors.As(err, &oe) || !oe.Forced || oe.RetryAfter <= 0 {
		t.Errorf("forced Allow = %v %+v", err, oe)
	}
	b.Reset()
	done, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	done(nil)
	done(boom) // second call ignored
	if st := b.State(); st != breaker.Closed {
		t.Errorf("state after ignored second done = %v", st)
	}
	// nil ctx-done
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	if err := b.Do(ctx, func(context.Context) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
		t.Errorf("Do(cancelled) = %v ran %v", err, ran)
	}
	// growth: open timeouts growing 100x from 1ns never go negative
	g, _ := breaker.New(breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(1), breaker.WithOpenTimeoutGrowth(100, math.MaxInt64), breaker.WithHalfOpenTimeout(time.Hour))
	for i := 0; i < 40; i++ {
		_ = g.Do(context.Background(), func(context.Context) error { return boom })
		s := g.Snapshot()
		if s.OpenTimeout <= 0 || s.RetryAfter < 0 {
			t.Fatalf("after %d trips: %+v", i, s)
		}
		if s.State == breaker.Open && s.OpenTimeout > time.Millisecond {
			break
		}
		time.Sleep(s.OpenTimeout + time.Microsecond)
	}
}
