package breaker_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/permits"
)

// Ways the breaker could get stuck for good or mislead its callers, each
// pinned: none of them happens.

// recoverPanic runs f and returns what it panicked with, or nil.
func recoverPanic(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// probing returns a breaker that opens on one failure for a second, with
// opts, tripped and a second later: the next call is a probe. It must run in
// a synctest bubble.
func probing(t *testing.T, opts ...breaker.Option) *breaker.Breaker {
	t.Helper()
	b := mustNew(t, append([]breaker.Option{breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second)}, opts...)...)
	b.Do(ctx, fail)
	time.Sleep(time.Second)
	return b
}

// hourly makes n calls an hour apart and returns how many ran fn.
func hourly(b *breaker.Breaker, n int) (ran int) {
	for range n {
		time.Sleep(time.Hour)
		b.Do(ctx, func(context.Context) error { ran++; return nil })
	}
	return ran
}

// TestHookPanicOnHalfOpenFreesTheSlot: a hook that panics on open -> half-open must not keep
// the probe slot its caller took.
func TestHookPanicOnHalfOpenFreesTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		panicked := false
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second),
			breaker.WithOnStateChange(func(from, to breaker.State) {
				if to == breaker.HalfOpen && !panicked {
					panicked = true
					panic("hook")
				}
			}))
		b.Do(ctx, fail)
		time.Sleep(time.Second)
		ran := false
		if r := recoverPanic(func() { b.Do(ctx, func(context.Context) error { ran = true; return nil }) }); r != "hook" {
			t.Fatalf("recovered %v, want the hook's panic", r)
		}
		if ran {
			t.Fatal("fn ran although the hook panicked before it")
		}
		if got := hourly(b, 100); got != 100 {
			t.Fatalf("%d of 100 hourly calls ran (state %v)", got, b.State())
		}
		wantState(t, b, breaker.Closed)
	})
}

// TestClassifierPanicFreesTheSlot: an IsFailure that panics (an unchecked type assertion)
// must not keep the probe slot either; the panic still reaches the caller.
func TestClassifierPanicFreesTheSlot(t *testing.T) {
	type codeError struct{ error }
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second),
			breaker.WithIsFailure(func(err error) bool { return err.(codeError).error != nil }))
		b.Do(ctx, func(context.Context) error { return codeError{errBoom} })
		time.Sleep(time.Second)
		// errBoom is no codeError: the assertion panics with a
		// *runtime.TypeAssertionError.
		r := recoverPanic(func() { b.Do(ctx, fail) })
		if _, ok := r.(error); !ok {
			t.Fatalf("recovered %v, want the classifier's type assertion panic", r)
		}
		time.Sleep(24 * time.Hour)
		if got := hourly(b, 10); got != 10 {
			t.Fatalf("a day later, %d of 10 hourly calls ran (state %v)", got, b.State())
		}
	})
}

// The same through Allow: the panic comes out of done.
func TestClassifierPanicInDoneFreesTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second),
			breaker.WithIsFailure(func(err error) bool {
				if errors.Is(err, errBoom) {
					panic("classifier")
				}
				return true
			}))
		b.Do(ctx, func(context.Context) error { return errors.New("other") })
		time.Sleep(time.Second)
		done, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		if r := recoverPanic(func() { done(errBoom) }); r != "classifier" {
			t.Fatalf("recovered %v, want the classifier's panic", r)
		}
		if got := hourly(b, 10); got != 10 {
			t.Fatalf("%d of 10 hourly calls ran (state %v)", got, b.State())
		}
	})
}

// TestLostProbeDoesNotWedge: a probe that never reports (its done lost) must not
// wedge the breaker half-open: with the default settings, a week of hourly
// calls gets through.
func TestLostProbeDoesNotWedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := probing(t)
		if _, err := b.Allow(); err != nil { // the probe whose done is lost
			t.Fatal(err)
		}
		if got := hourly(b, 168); got < 167 {
			t.Fatalf("%d of 168 hourly calls ran (state %v)", got, b.State())
		}
		wantState(t, b, breaker.Closed)
	})
}

// TestRetryAfterWhileProbesFull: while every probe slot is taken, RetryAfter says how
// long until the half-open timeout frees them, never 0.
func TestRetryAfterWhileProbesFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := probing(t)
		if _, err := b.Allow(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		_, err := b.Allow()
		wantOpenError(t, err, time.Minute-10*time.Second) // the default half-open timeout: 1 minute
		// A caller that obeys RetryAfter makes one more attempt, not thousands.
		attempts := 0
		for b.State() != breaker.Closed {
			attempts++
			var oe *breaker.OpenError
			err := b.Do(ctx, succeed)
			if !errors.As(err, &oe) {
				break
			}
			if oe.RetryAfter <= 0 {
				t.Fatalf("attempt %d: RetryAfter %v", attempts, oe.RetryAfter)
			}
			time.Sleep(oe.RetryAfter)
		}
		if attempts > 3 {
			t.Fatalf("%d attempts to get through", attempts)
		}
		wantState(t, b, breaker.Closed)
	})
}

// TestFnPanicWinsOverHookPanic: when fn panics and the hook panics too, the caller
// recovers fn's panic. No hook runs on the way up; the transition is
// delivered by the next call, which gets the hook's panic.
func TestFnPanicWinsOverHookPanic(t *testing.T) {
	var rec recorder
	b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOnStateChange(func(from, to breaker.State) {
		rec.hook(from, to)
		panic("hook")
	}))
	if r := recoverPanic(func() { b.Do(ctx, func(context.Context) error { panic("fn") }) }); r != "fn" {
		t.Fatalf("recovered %v, want fn's panic", r)
	}
	rec.want(t)
	if r := recoverPanic(func() { b.State() }); r != "hook" {
		t.Fatalf("the next call recovered %v, want the hook's panic", r)
	}
	rec.want(t, "closed->open")
	wantState(t, b, breaker.Open)
}

// TestNilOptionAndLastOptionWins: a nil option is an error, not a nil dereference, and
// the last of two options wins even when an earlier one was invalid.
func TestNilOptionAndLastOptionWins(t *testing.T) {
	if b, err := breaker.New(nil); !errors.Is(err, permits.ErrInvalidConfig) || b != nil {
		t.Fatalf("New(nil) = %v, %v; want ErrInvalidConfig", b, err)
	}
	if b, err := breaker.New(breaker.WithConsecutiveFailures(2), nil); !errors.Is(err, permits.ErrInvalidConfig) || b != nil {
		t.Fatalf("New(opt, nil) = %v, %v; want ErrInvalidConfig", b, err)
	}
	for name, opts := range map[string][]breaker.Option{
		"open timeout":   {breaker.WithOpenTimeout(0), breaker.WithOpenTimeout(time.Second)},
		"failures":       {breaker.WithConsecutiveFailures(0), breaker.WithConsecutiveFailures(3)},
		"probes":         {breaker.WithHalfOpenProbes(0), breaker.WithHalfOpenProbes(2)},
		"mode":           {breaker.WithFailureRate(2, time.Second, 1), breaker.WithConsecutiveFailures(3)},
		"rate then rate": {breaker.WithFailureRate(0, time.Second, 1), breaker.WithFailureRate(0.5, time.Second, 1)},
	} {
		if _, err := breaker.New(opts...); err != nil {
			t.Errorf("%s: the last option should win: %v", name, err)
		}
	}
	if _, err := breaker.New(breaker.WithOpenTimeout(time.Second), breaker.WithOpenTimeout(0)); !errors.Is(err, permits.ErrInvalidConfig) {
		t.Errorf("an invalid last option was accepted: %v", err)
	}
}

// TestExtremeClockSaturates: however extreme the injected clock, RetryAfter stays
// in (0, open timeout].
func TestExtremeClockSaturates(t *testing.T) {
	for _, tc := range []struct{ trip, ask time.Duration }{
		{math.MaxInt64 - time.Second, math.MinInt64},
		{math.MaxInt64, math.MinInt64},
		{math.MinInt64, math.MaxInt64 - time.Hour},
		{0, math.MinInt64},
		{math.MaxInt64, math.MaxInt64},
	} {
		var c fakeClock
		b := withClock(t, &c, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(30*time.Second))
		c.Set(tc.trip)
		b.Do(ctx, fail)
		c.Set(tc.ask)
		_, err := b.Allow()
		var oe *breaker.OpenError
		if errors.As(err, &oe) && (oe.RetryAfter <= 0 || oe.RetryAfter > 30*time.Second) {
			t.Errorf("tripped at %v, asked at %v: RetryAfter %v", tc.trip, tc.ask, oe.RetryAfter)
		}
	}
}

// TestAHookStormKeepsTheQueueAndEachDoBounded: with a 1µs open timeout and
// a hook that takes 200µs, transitions come far faster than the hook can
// take them. For 200 ms of virtual time (a second at full volume), four
// goroutines fail calls as fast as they can (a microsecond apart). The
// queue never holds more than four transitions, no Do spends longer
// delivering than two deliveries of four, and every transition is
// delivered or counted as dropped.
func TestAHookStormKeepsTheQueueAndEachDoBounded(t *testing.T) {
	const (
		hookTime = 200 * time.Microsecond
		workers  = 4
		perCall  = 2 * 4 * hookTime // two deliveries of at most four transitions each
	)
	runFor := time.Duration(testutil.Volume(200, 1000)) * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		var stop atomic.Bool
		var hooked, dropped atomic.Int64
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Microsecond),
			breaker.WithOnTransition(func(tr breaker.Transition) {
				hooked.Add(1)
				dropped.Add(tr.Dropped)
				if !stop.Load() {
					time.Sleep(hookTime)
				}
			}))
		start := time.Now()
		var inDoSince [workers]atomic.Int64 // ns since start, -1 when not in Do
		var longest atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			inDoSince[w].Store(-1)
			wg.Go(func() {
				for !stop.Load() && time.Since(start) < runFor {
					t0 := time.Since(start)
					inDoSince[w].Store(int64(t0))
					b.Do(ctx, fail)
					d := time.Since(start) - t0
					inDoSince[w].Store(-1)
					for old := longest.Load(); int64(d) > old && !longest.CompareAndSwap(old, int64(d)); old = longest.Load() {
					}
					time.Sleep(time.Microsecond)
				}
			})
		}
		// The watchdog samples the queue, and ends the storm early if one Do
		// has been delivering for too long, so that a failing run fails in
		// milliseconds rather than after delivering a huge backlog.
		maxPending := 0
		wg.Go(func() {
			for !stop.Load() && time.Since(start) < runFor {
				time.Sleep(time.Millisecond)
				maxPending = max(maxPending, b.Snapshot().PendingTransitions)
				for w := range workers {
					if since := inDoSince[w].Load(); since >= 0 && time.Since(start)-time.Duration(since) > 10*perCall {
						t.Errorf("worker %d has been in one Do for %v", w, time.Since(start)-time.Duration(since))
						stop.Store(true)
					}
				}
			}
		})
		wg.Wait()
		stop.Store(true)
		snap := b.Snapshot() // delivers what was pending: the hook no longer sleeps
		maxPending = max(maxPending, snap.PendingTransitions)
		if b.Snapshot().PendingTransitions != 0 {
			t.Error("transitions still pending after a call delivered them")
		}
		t.Logf("hook storm: %d transitions in %v: %d delivered to the hook, %d dropped; "+
			"at most %d pending at a time; the longest Do took %v (bound %v)",
			snap.Transitions, runFor, hooked.Load(), snap.DroppedTransitions,
			maxPending, time.Duration(longest.Load()), perCall)
		if d := time.Duration(longest.Load()); d > perCall {
			t.Errorf("one Do took %v, more than %v", d, perCall)
		}
		if maxPending > 4 {
			t.Errorf("up to %d transitions pending, want at most 4", maxPending)
		}
		if got := hooked.Load() + snap.DroppedTransitions; got != snap.Transitions {
			t.Errorf("delivered + dropped = %d, want the %d transitions made", got, snap.Transitions)
		}
		if dropped.Load() != snap.DroppedTransitions {
			t.Errorf("the hook was told of %d dropped transitions, the breaker counts %d", dropped.Load(), snap.DroppedTransitions)
		}
		if snap.Transitions < 100_000 {
			t.Errorf("only %d transitions: not a storm", snap.Transitions)
		}
	})
}
