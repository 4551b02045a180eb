package breaker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/breaker"
)

// Count mode: n-1 failures and a success reset; n in a row open; the
// refusal is an *OpenError matching ErrOpen with the rest of the timeout,
// fn is not run; at the timeout exactly a probe is admitted.
func TestCountModeAndOpenRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithConsecutiveFailures(3), breaker.WithOpenTimeout(10*time.Second))
		b.Do(ctx, fail)
		b.Do(ctx, fail)
		b.Do(ctx, succeed)
		b.Do(ctx, fail)
		b.Do(ctx, fail)
		wantState(t, b, breaker.Closed)
		b.Do(ctx, fail)
		wantState(t, b, breaker.Open)
		ran := false
		err := b.Do(ctx, func(context.Context) error { ran = true; return nil })
		wantOpenError(t, err, 10*time.Second)
		if ran {
			t.Fatal("fn ran while open")
		}
		time.Sleep(4 * time.Second)
		wantOpenError(t, b.Do(ctx, succeed), 6*time.Second)
		time.Sleep(6*time.Second - 1)
		wantOpenError(t, b.Do(ctx, succeed), 1)
		time.Sleep(time.Nanosecond) // to the timeout exactly
		if err := b.Do(ctx, succeed); err != nil {
			t.Fatalf("probe at the timeout refused: %v", err)
		}
		wantState(t, b, breaker.Closed)
	})
}

// Ignored outcomes (the caller's cancellation) neither count nor reset; a
// deadline is a failure. In half-open, a cancelled probe frees its slot and
// a timed-out probe reopens.
func TestCancellationDuringCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithConsecutiveFailures(2), breaker.WithOpenTimeout(time.Second))
		b.Do(ctx, fail)
		c, cancel := context.WithCancel(ctx)
		err := b.Do(c, func(ctx context.Context) error { cancel(); return ctx.Err() })
		if !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		if s := b.Snapshot(); s.ConsecutiveFailures != 1 || s.Calls != 1 {
			t.Fatalf("after a cancelled call: %+v", s)
		}
		// A deadline inside the call is a failure: the second in a row.
		dc, dcancel := context.WithTimeout(ctx, time.Millisecond)
		defer dcancel()
		b.Do(dc, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		wantState(t, b, breaker.Open)
		time.Sleep(time.Second)
		c2, cancel2 := context.WithCancel(ctx)
		b.Do(c2, func(ctx context.Context) error { cancel2(); return ctx.Err() })
		wantState(t, b, breaker.HalfOpen)
		if s := b.Snapshot(); s.ProbesInFlight != 0 || s.RetryAfter != 0 {
			t.Fatalf("a cancelled probe kept its slot: %+v", s)
		}
		dc2, dcancel2 := context.WithTimeout(ctx, time.Millisecond)
		defer dcancel2()
		b.Do(dc2, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		wantState(t, b, breaker.Open)
	})
}

// Rate mode: a failure that has left the window no longer counts, at the
// documented bucket edge.
func TestRateWindowEdge(t *testing.T) {
	for _, tc := range []struct {
		second   time.Duration // when the last two outcomes are recorded
		wantOpen bool
	}{
		{9999 * time.Millisecond, true},
		{10 * time.Second, false},
	} {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			b := mustNew(t, breaker.WithFailureRate(0.6, 10*time.Second, 2))
			time.Sleep(500 * time.Millisecond)
			b.Do(ctx, fail) // in bucket [0s, 1s): counts until 10.0s
			time.Sleep(time.Until(start.Add(tc.second)))
			b.Do(ctx, succeed)
			wantState(t, b, breaker.Closed)
			b.Do(ctx, fail)
			if got := b.State() == breaker.Open; got != tc.wantOpen {
				s := b.Snapshot()
				t.Fatalf("at %v: open %v, want %v (%+v)", tc.second, got, tc.wantOpen, s)
			}
		})
	}
}

// Rate mode: the minimum of calls, and ignored outcomes are not calls.
func TestRateMinCallsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithFailureRate(0.5, time.Minute, 4))
		b.Do(ctx, fail)
		b.Do(ctx, fail)
		for range 5 {
			b.Do(ctx, func(context.Context) error { return context.Canceled })
		}
		b.Do(ctx, fail)
		wantState(t, b, breaker.Closed)
		if s := b.Snapshot(); s.Calls != 3 || s.Failures != 3 {
			t.Fatalf("%+v", s)
		}
		b.Do(ctx, succeed)
		wantState(t, b, breaker.Open)
	})
}

// Half-open: n probes must all succeed to close; a failure after some
// successes reopens, and the growth multiplies the timeout.
func TestHalfOpenProbesAndGrowth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second),
			breaker.WithHalfOpenProbes(3), breaker.WithOpenTimeoutGrowth(1.5, 3*time.Second))
		b.Do(ctx, fail)
		for _, want := range []time.Duration{1500 * time.Millisecond, 2250 * time.Millisecond, 3 * time.Second, 3 * time.Second} {
			time.Sleep(b.Snapshot().RetryAfter)
			b.Do(ctx, succeed)
			b.Do(ctx, succeed)
			wantState(t, b, breaker.HalfOpen)
			b.Do(ctx, fail)
			wantState(t, b, breaker.Open)
			wantOpenError(t, b.Do(ctx, succeed), want)
		}
		time.Sleep(3 * time.Second)
		for range 3 {
			b.Do(ctx, succeed)
		}
		wantState(t, b, breaker.Closed)
		b.Do(ctx, fail)
		wantOpenError(t, b.Do(ctx, succeed), time.Second)
	})
}

// Many goroutines calling Do while the state changes: every admitted call
// after the first trip fails and takes less than the open timeout, so every
// one is a probe and no two probe spells overlap: never more than the
// probes at once.
func TestConcurrentProbesLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const probes = 3
		var trans atomic.Int64
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(10*time.Millisecond),
			breaker.WithHalfOpenProbes(probes),
			breaker.WithOnStateChange(func(from, to breaker.State) { trans.Add(1) }))
		b.Do(ctx, fail)
		var mu sync.Mutex
		in, most, admitted := 0, 0, 0
		var wg sync.WaitGroup
		for g := range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 200 {
					b.Do(ctx, func(context.Context) error {
						mu.Lock()
						in++
						admitted++
						most = max(most, in)
						mu.Unlock()
						time.Sleep(time.Duration(1+(g+i)%5) * time.Millisecond)
						mu.Lock()
						in--
						mu.Unlock()
						return errBoom
					})
					time.Sleep(time.Duration(1+g%3) * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		b.State()
		if most > probes {
			t.Fatalf("%d probes at once, want at most %d", most, probes)
		}
		if admitted == 0 {
			t.Fatal("no probe admitted")
		}
		s := b.Snapshot()
		if s.ProbesInFlight != 0 && s.State == breaker.HalfOpen {
			t.Fatalf("%+v", s)
		}
		t.Logf("admitted %d, most %d, transitions %d, delivered %d", admitted, most, s.Transitions, trans.Load())
	})
}

// Concurrency in count mode: n goroutines failing at once open the breaker
// exactly once; the transitions delivered plus dropped add up.
func TestConcurrentTripsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		b := mustNew(t, breaker.WithConsecutiveFailures(5), breaker.WithOpenTimeout(time.Hour),
			breaker.WithOnStateChange(rec.hook))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				b.Do(ctx, func(context.Context) error { time.Sleep(time.Millisecond); return errBoom })
			}()
		}
		close(start)
		wg.Wait()
		b.State()
		rec.want(t, "closed->open")
		if s := b.Snapshot(); s.Transitions != 1 || s.Failures != 5 {
			t.Fatalf("%+v", s)
		}
	})
}

// Slow calls: a slow probe that succeeds reopens; in count mode a slow success
// counts as a failure in a row.
func TestSlowProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithConsecutiveFailures(2), breaker.WithOpenTimeout(time.Second),
			breaker.WithSlowCallThreshold(100*time.Millisecond))
		slow := func(context.Context) error { time.Sleep(101 * time.Millisecond); return nil }
		b.Do(ctx, slow)
		b.Do(ctx, slow)
		wantState(t, b, breaker.Open)
		time.Sleep(time.Second)
		b.Do(ctx, slow)
		wantState(t, b, breaker.Open)
		time.Sleep(time.Second)
		b.Do(ctx, func(context.Context) error { time.Sleep(100 * time.Millisecond); return nil })
		wantState(t, b, breaker.Closed)
	})
}

// Snapshot while half-open, and RetryAfter while every slot is taken.
func TestHalfOpenFullRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second),
			breaker.WithHalfOpenTimeout(10*time.Second))
		b.Do(ctx, fail)
		time.Sleep(time.Second)
		done, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		var oe *breaker.OpenError
		if err := b.Do(ctx, succeed); !errors.As(err, &oe) || oe.State != breaker.HalfOpen || oe.RetryAfter != 7*time.Second {
			t.Fatalf("%v", err)
		}
		s := b.Snapshot()
		if s.State != breaker.HalfOpen || s.ProbesInFlight != 1 || s.RetryAfter != 7*time.Second {
			t.Fatalf("%+v", s)
		}
		done(nil)
		wantState(t, b, breaker.Closed)
	})
}
