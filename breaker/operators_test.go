package breaker_test

import (
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/permits"
)

func TestInvalidNewOptions(t *testing.T) {
	for name, opt := range map[string]breaker.Option{
		"growth below one":       breaker.WithOpenTimeoutGrowth(0.5, time.Minute),
		"growth too large":       breaker.WithOpenTimeoutGrowth(101, time.Hour),
		"NaN growth":             breaker.WithOpenTimeoutGrowth(math.NaN(), time.Hour),
		"max below open timeout": breaker.WithOpenTimeoutGrowth(2, time.Second),
		"zero half-open timeout": breaker.WithHalfOpenTimeout(0),
		"negative half-open":     breaker.WithHalfOpenTimeout(-time.Second),
		"nil classifier":         breaker.WithClassifier(nil),
		"negative slow":          breaker.WithSlowCallThreshold(-time.Second),
	} {
		b, err := breaker.New(opt)
		if !errors.Is(err, permits.ErrInvalidConfig) || b != nil {
			t.Errorf("%s: New = %v, %v; want nil, ErrInvalidConfig", name, b, err)
		}
	}
	for name, opts := range map[string][]breaker.Option{
		"growth one":       {breaker.WithOpenTimeoutGrowth(1, 0)},
		"growth at max":    {breaker.WithOpenTimeoutGrowth(100, breaker.DefaultOpenTimeout)},
		"slow off":         {breaker.WithSlowCallThreshold(time.Second), breaker.WithSlowCallThreshold(0)},
		"half-open":        {breaker.WithHalfOpenTimeout(time.Nanosecond)},
		"classifier reset": {breaker.WithClassifier(nil), breaker.WithClassifier(breaker.DefaultClassifier)},
	} {
		if _, err := breaker.New(opts...); err != nil {
			t.Errorf("%s: rejected: %v", name, err)
		}
	}
}

func TestOpenErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  breaker.OpenError
		want string
	}{
		{breaker.OpenError{State: breaker.Open, RetryAfter: time.Second}, "breaker: open, retry after 1s"},
		{breaker.OpenError{Name: "db", State: breaker.Open, RetryAfter: time.Second}, `breaker "db": open, retry after 1s`},
		{breaker.OpenError{State: breaker.HalfOpen, RetryAfter: time.Minute}, "breaker: open (half-open, every probe slot taken), retry after 1m0s"},
		{breaker.OpenError{Name: "db", State: breaker.Open, Forced: true, RetryAfter: time.Second}, `breaker "db": forced open, retry after 1s`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

// The name shows in refusals, Snapshot and the hook, and a transition
// carries the instant it happened.
func TestNameAndTransitionInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []breaker.Transition
		b := mustNew(t, breaker.WithName("payments"), breaker.WithConsecutiveFailures(1),
			breaker.WithOpenTimeout(time.Second), breaker.WithOnTransition(func(tr breaker.Transition) { got = append(got, tr) }))
		start := time.Now()
		if b.Name() != "payments" || b.Snapshot().Name != "payments" {
			t.Fatalf("Name %q, Snapshot().Name %q", b.Name(), b.Snapshot().Name)
		}
		time.Sleep(3 * time.Second)
		b.Do(ctx, fail)
		var oe *breaker.OpenError
		if err := b.Do(ctx, succeed); !errors.As(err, &oe) || oe.Name != "payments" || oe.State != breaker.Open {
			t.Fatalf("refusal %#v", err)
		}
		time.Sleep(1500 * time.Millisecond)
		b.Do(ctx, succeed)
		want := []breaker.Transition{
			{Name: "payments", From: breaker.Closed, To: breaker.Open, At: start.Add(3 * time.Second)},
			{Name: "payments", From: breaker.Open, To: breaker.HalfOpen, At: start.Add(4500 * time.Millisecond)},
			{Name: "payments", From: breaker.HalfOpen, To: breaker.Closed, At: start.Add(4500 * time.Millisecond)},
		}
		if len(got) != len(want) {
			t.Fatalf("transitions %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i].Name != want[i].Name || got[i].From != want[i].From || got[i].To != want[i].To ||
				!got[i].At.Equal(want[i].At) || got[i].Dropped != 0 {
				t.Errorf("transition %d: %+v, want %+v", i, got[i], want[i])
			}
		}
		if s := b.Snapshot(); !s.LastTransition.Equal(start.Add(4500*time.Millisecond)) || s.Transitions != 3 {
			t.Errorf("snapshot %+v", s)
		}
	})
}

// Snapshot through a breaker's life in count mode.
func TestSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		b := mustNew(t, breaker.WithConsecutiveFailures(3), breaker.WithHalfOpenProbes(2),
			breaker.WithOpenTimeout(10*time.Second))
		if s := b.Snapshot(); s != (breaker.Snapshot{State: breaker.Closed, OpenTimeout: 10 * time.Second}) {
			t.Fatalf("a new breaker: %+v", s)
		}
		b.Do(ctx, succeed)
		b.Do(ctx, fail)
		b.Do(ctx, fail)
		want := breaker.Snapshot{State: breaker.Closed, Calls: 3, Failures: 2, ConsecutiveFailures: 2, OpenTimeout: 10 * time.Second}
		if s := b.Snapshot(); s != want {
			t.Fatalf("closed: %+v, want %+v", s, want)
		}
		time.Sleep(time.Second)
		b.Do(ctx, fail)
		want = breaker.Snapshot{State: breaker.Open, Calls: 4, Failures: 3, ConsecutiveFailures: 3,
			OpenTimeout: 10 * time.Second, RetryAfter: 10 * time.Second, LastTransition: start.Add(time.Second), Transitions: 1}
		if s := b.Snapshot(); s != want {
			t.Fatalf("open: %+v, want %+v", s, want)
		}
		time.Sleep(10 * time.Second)
		p1, _ := b.Allow()
		want = breaker.Snapshot{State: breaker.HalfOpen, Calls: 4, Failures: 3, ConsecutiveFailures: 3, ProbesInFlight: 1,
			OpenTimeout: 10 * time.Second, LastTransition: start.Add(11 * time.Second), Transitions: 2}
		if s := b.Snapshot(); s != want {
			t.Fatalf("half-open, one probe: %+v, want %+v", s, want)
		}
		p1(nil)
		p2, _ := b.Allow()
		time.Sleep(time.Second)
		want.ProbesInFlight, want.ProbeSuccesses, want.RetryAfter = 1, 1, time.Minute-time.Second
		if s := b.Snapshot(); s != want {
			t.Fatalf("half-open, every slot taken for 1s: %+v, want %+v", s, want)
		}
		p2(nil)
		want = breaker.Snapshot{State: breaker.Closed, OpenTimeout: 10 * time.Second,
			LastTransition: start.Add(12 * time.Second), Transitions: 3}
		if s := b.Snapshot(); s != want {
			t.Fatalf("closed again: %+v, want %+v", s, want)
		}
	})
}

// In rate mode the counts are the window's, and they leave with their
// bucket.
func TestSnapshotRateMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithFailureRate(0.9, 10*time.Second, 100))
		for range 5 {
			b.Do(ctx, fail)
		}
		b.Do(ctx, succeed)
		if s := b.Snapshot(); s.Calls != 6 || s.Failures != 5 || s.ConsecutiveFailures != 0 {
			t.Fatalf("%+v", s)
		}
		time.Sleep(10 * time.Second)
		if s := b.Snapshot(); s.Calls != 0 || s.Failures != 0 {
			t.Fatalf("a window later: %+v", s)
		}
	})
}

// ForceOpen holds the breaker open past its timeout, until Reset; calls in
// flight across either become stale.
func TestForceOpenAndReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		b := mustNew(t, breaker.WithConsecutiveFailures(2), breaker.WithOpenTimeout(time.Second),
			breaker.WithOnStateChange(rec.hook))
		b.Do(ctx, fail)
		inflight, _ := b.Allow()
		b.ForceOpen()
		inflight(errBoom) // stale: no effect
		time.Sleep(time.Hour)
		wantState(t, b, breaker.Open)
		var oe *breaker.OpenError
		if err := b.Do(ctx, succeed); !errors.As(err, &oe) || !oe.Forced || oe.RetryAfter != time.Second {
			t.Fatalf("refusal %#v, want forced with RetryAfter 1s", err)
		}
		if s := b.Snapshot(); !s.Forced || s.RetryAfter != time.Second {
			t.Fatalf("snapshot %+v", s)
		}
		b.ForceOpen() // again: still forced, no transition
		b.Reset()
		wantState(t, b, breaker.Closed)
		if s := b.Snapshot(); s.Forced || s.ConsecutiveFailures != 0 || s.Calls != 0 {
			t.Fatalf("after Reset: %+v", s)
		}
		b.Do(ctx, fail)
		wantState(t, b, breaker.Closed) // one of two: Reset cleared the count

		// Reset while closed clears the counts, and outcomes from before it
		// are stale.
		before, _ := b.Allow()
		b.Reset()
		before(errBoom)
		b.Do(ctx, fail)
		wantState(t, b, breaker.Closed)
		b.Do(ctx, fail)
		wantState(t, b, breaker.Open)

		// ForceOpen from half-open makes the probe stale.
		time.Sleep(time.Second)
		probe, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		b.ForceOpen()
		probe(nil)
		wantState(t, b, breaker.Open)
		b.Reset()
		rec.want(t, "closed->open", "open->closed", "closed->open", "open->half-open", "half-open->open", "open->closed")
	})
}

// The open timeout grows by the factor each time the breaker reopens from
// half-open, up to the cap, and closing brings it back.
func TestOpenTimeoutGrowth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second),
			breaker.WithOpenTimeoutGrowth(2, 10*time.Second), breaker.WithHalfOpenTimeout(time.Hour))
		b.Do(ctx, fail)
		for _, want := range []time.Duration{1, 2, 4, 8, 10, 10} {
			want *= time.Second
			_, err := b.Allow()
			wantOpenError(t, err, want)
			if s := b.Snapshot(); s.OpenTimeout != want {
				t.Fatalf("snapshot open timeout %v, want %v", s.OpenTimeout, want)
			}
			time.Sleep(want)
			b.Do(ctx, fail) // the probe fails
		}
		// A half-open timeout reopening counts as a trip too.
		time.Sleep(10 * time.Second)
		b.Allow() // lost
		time.Sleep(time.Hour)
		_, err := b.Allow()
		wantOpenError(t, err, 10*time.Second)
		time.Sleep(10 * time.Second)
		b.Do(ctx, succeed)
		wantState(t, b, breaker.Closed)
		b.Do(ctx, fail)
		_, err = b.Allow()
		wantOpenError(t, err, time.Second)
	})
}

// The half-open timeout starts when the last free slot is taken, a freed
// slot stops it, RetryAfter counts down to it, and the probes it makes stale
// neither close the breaker nor free a slot of the next half-open spell.
func TestHalfOpenTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second),
			breaker.WithHalfOpenProbes(2), breaker.WithHalfOpenTimeout(5*time.Second),
			breaker.WithClassifier(classifier), breaker.WithOnStateChange(rec.hook))
		b.Do(ctx, fail)
		time.Sleep(time.Second)
		p1, _ := b.Allow()
		time.Sleep(10 * time.Second) // one slot free: no timeout
		wantState(t, b, breaker.HalfOpen)
		p2, _ := b.Allow() // every slot taken: the timeout starts
		time.Sleep(2 * time.Second)
		_, err := b.Allow()
		wantOpenError(t, err, 3*time.Second)
		p2(errQuota) // ignored: frees a slot, which stops the timeout
		time.Sleep(time.Hour)
		wantState(t, b, breaker.HalfOpen)
		p3, _ := b.Allow() // full again: 5s from now
		time.Sleep(4999 * time.Millisecond)
		_, err = b.Allow()
		wantOpenError(t, err, time.Millisecond)
		time.Sleep(time.Millisecond)
		_, err = b.Allow() // the timeout: reopens, with a fresh open timeout
		wantOpenError(t, err, time.Second)
		rec.want(t, "closed->open", "open->half-open", "half-open->open")

		time.Sleep(time.Second)
		q1, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		p1(nil) // stale
		p3(nil) // stale
		_, err = b.Allow()
		if err != nil {
			t.Fatalf("a stale probe took a slot of the new spell: %v", err)
		}
		wantState(t, b, breaker.HalfOpen)
		q1(nil)
		wantState(t, b, breaker.HalfOpen) // one success of two: the stale ones did not count
	})
}

// TestOperatorsUnderConcurrency runs ForceOpen, Reset, Snapshot and calls
// from many goroutines; run with -race. Every probe slot must come back:
// after the storm, a Reset breaker admits calls and closes.
func TestOperatorsUnderConcurrency(t *testing.T) {
	var c fakeClock
	clock := func() time.Time { c.Advance(time.Millisecond); return c.Now() }
	b, err := breaker.NewWithClock(clock, breaker.WithConsecutiveFailures(2), breaker.WithHalfOpenProbes(3),
		breaker.WithOpenTimeout(5*time.Millisecond), breaker.WithHalfOpenTimeout(20*time.Millisecond),
		breaker.WithOpenTimeoutGrowth(2, 100*time.Millisecond), breaker.WithOnTransition(func(breaker.Transition) {}))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				switch (g + i) % 50 {
				case 0:
					b.ForceOpen()
				case 1:
					b.Reset()
				case 2:
					b.Snapshot()
				case 3:
					if done, err := b.Allow(); err == nil && i%3 != 0 {
						done(nil) // the others are lost
					}
				default:
					if i%2 == 0 {
						b.Do(ctx, fail)
					} else {
						b.Do(ctx, succeed)
					}
				}
			}
		})
	}
	wg.Wait()
	b.Reset()
	for range 10 {
		if err := b.Do(ctx, succeed); err != nil {
			t.Fatalf("after Reset: %v", err)
		}
	}
	if s := b.Snapshot(); s.State != breaker.Closed || s.PendingTransitions != 0 {
		t.Fatalf("%+v", s)
	}
}
