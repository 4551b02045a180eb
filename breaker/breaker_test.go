package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/internal/window"
	"github.com/sluicehq/sluice/permits"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	errBoom = errors.New("boom")
	ctx     = context.Background()
)

func mustNew(t testing.TB, opts ...breaker.Option) *breaker.Breaker {
	t.Helper()
	b, err := breaker.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeClock is a clock the test moves by hand; it may go backwards.
type fakeClock = testutil.Clock

func withClock(t testing.TB, c *fakeClock, opts ...breaker.Option) *breaker.Breaker {
	t.Helper()
	b, err := breaker.NewWithClock(c.Now, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fail(context.Context) error    { return errBoom }
func succeed(context.Context) error { return nil }

// wantState fails the test unless b is in state want.
func wantState(t *testing.T, b *breaker.Breaker, want breaker.State) {
	t.Helper()
	if got := b.State(); got != want {
		t.Fatalf("state %v, want %v", got, want)
	}
}

// wantOpenError fails the test unless err is an *OpenError with retryAfter.
func wantOpenError(t *testing.T, err error, retryAfter time.Duration) {
	t.Helper()
	var oe *breaker.OpenError
	if !errors.As(err, &oe) || !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("error %v, want an *OpenError matching ErrOpen", err)
	}
	if oe.RetryAfter != retryAfter {
		t.Fatalf("RetryAfter %v, want %v", oe.RetryAfter, retryAfter)
	}
}

// recorder is an OnStateChange hook that keeps the transitions.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) hook(from, to breaker.State) {
	r.mu.Lock()
	r.got = append(r.got, from.String()+"->"+to.String())
	r.mu.Unlock()
}

func (r *recorder) want(t *testing.T, want ...string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if fmt.Sprint(r.got) != fmt.Sprint(want) {
		t.Fatalf("transitions %v, want %v", r.got, want)
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[breaker.State]string{
		breaker.Closed: "closed", breaker.Open: "open", breaker.HalfOpen: "half-open", 7: "State(7)",
	} {
		if got := s.String(); got != want {
			t.Errorf("%d: %q, want %q", int(s), got, want)
		}
	}
}

func TestInvalidConfig(t *testing.T) {
	for name, opt := range map[string]breaker.Option{
		"zero failures":         breaker.WithConsecutiveFailures(0),
		"zero rate":             breaker.WithFailureRate(0, time.Second, 1),
		"rate above one":        breaker.WithFailureRate(1.01, time.Second, 1),
		"NaN rate":              breaker.WithFailureRate(math.NaN(), time.Second, 1),
		"window too short":      breaker.WithFailureRate(0.5, 9, 1),
		"zero min calls":        breaker.WithFailureRate(0.5, time.Second, 0),
		"zero open timeout":     breaker.WithOpenTimeout(0),
		"negative open timeout": breaker.WithOpenTimeout(-time.Second),
		"zero probes":           breaker.WithHalfOpenProbes(0),
		"nil IsFailure":         breaker.WithIsFailure(nil),
	} {
		b, err := breaker.New(opt)
		if !errors.Is(err, permits.ErrInvalidConfig) || b != nil {
			t.Errorf("%s: New = %v, %v; want nil, ErrInvalidConfig", name, b, err)
		}
	}
	if _, err := breaker.New(breaker.WithOnStateChange(nil), breaker.WithFailureRate(1, time.Minute, 1)); err != nil {
		t.Errorf("valid options rejected: %v", err)
	}
}

// TestCountMode walks every transition with the defaults: 5 consecutive
// failures, 30s open, 1 probe.
func TestCountMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		b := mustNew(t, breaker.WithOnStateChange(rec.hook))
		start := time.Now()
		for range 4 {
			if err := b.Do(ctx, fail); err != errBoom {
				t.Fatalf("Do = %v, want fn's error", err)
			}
		}
		wantState(t, b, breaker.Closed)
		b.Do(ctx, fail) // the fifth
		wantState(t, b, breaker.Open)
		ran := false
		err := b.Do(ctx, func(context.Context) error { ran = true; return nil })
		wantOpenError(t, err, 30*time.Second)
		if ran {
			t.Fatal("an open breaker ran fn")
		}
		time.Sleep(10 * time.Second)
		_, err = b.Allow()
		wantOpenError(t, err, 20*time.Second)

		// The timeout elapses: one probe at a time.
		time.Sleep(time.Until(start.Add(30 * time.Second)))
		done, err := b.Allow()
		if err != nil {
			t.Fatalf("probe refused: %v", err)
		}
		wantState(t, b, breaker.HalfOpen)
		_, err = b.Allow()
		wantOpenError(t, err, time.Minute) // the half-open timeout, which the probes took no time of
		// A probe failure reopens it with a fresh timeout.
		time.Sleep(time.Second)
		done(errBoom)
		wantState(t, b, breaker.Open)
		_, err = b.Allow()
		wantOpenError(t, err, 30*time.Second)

		time.Sleep(30 * time.Second)
		wantState(t, b, breaker.HalfOpen)
		if err := b.Do(ctx, succeed); err != nil {
			t.Fatal(err)
		}
		wantState(t, b, breaker.Closed)
		rec.want(t, "closed->open", "open->half-open", "half-open->open", "open->half-open", "half-open->closed")
	})
}

func TestSuccessResetsTheCount(t *testing.T) {
	b := mustNew(t, breaker.WithConsecutiveFailures(3))
	for range 10 {
		b.Do(ctx, fail)
		b.Do(ctx, fail)
		b.Do(ctx, succeed)
	}
	wantState(t, b, breaker.Closed)
}

// The default IsFailure counts every error but context.Canceled, which is
// ignored: it neither counts nor resets the count, and a probe ending with
// it frees its slot without closing the breaker.
func TestCanceledIsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithConsecutiveFailures(2), breaker.WithOpenTimeout(time.Second))
		canceled := func(context.Context) error { return fmt.Errorf("call: %w", context.Canceled) }
		b.Do(ctx, fail)
		for range 10 {
			b.Do(ctx, canceled)
		}
		wantState(t, b, breaker.Closed)
		b.Do(ctx, func(context.Context) error { return context.DeadlineExceeded }) // a failure
		wantState(t, b, breaker.Open)

		time.Sleep(time.Second)
		for range 3 {
			if err := b.Do(ctx, canceled); !errors.Is(err, context.Canceled) {
				t.Fatalf("probe: %v, want it to run and return context.Canceled", err)
			}
			wantState(t, b, breaker.HalfOpen)
		}
		b.Do(ctx, succeed)
		wantState(t, b, breaker.Closed)
	})
}

// With a custom IsFailure, errors it rejects count as successes.
func TestCustomIsFailure(t *testing.T) {
	errNotFound := errors.New("not found")
	b := mustNew(t, breaker.WithConsecutiveFailures(2),
		breaker.WithIsFailure(func(err error) bool { return !errors.Is(err, errNotFound) }))
	for range 5 {
		b.Do(ctx, fail)
		b.Do(ctx, func(context.Context) error { return errNotFound }) // resets
	}
	wantState(t, b, breaker.Closed)
	b.Do(ctx, fail)
	b.Do(ctx, fail)
	wantState(t, b, breaker.Open)
}

// Half-open admits at most HalfOpenProbes calls at once, and no more than the
// successes still needed; that many successes close it.
func TestProbeLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithHalfOpenProbes(3),
			breaker.WithOpenTimeout(time.Second))
		b.Do(ctx, fail)
		time.Sleep(time.Second)
		var dones []func(error)
		for range 3 {
			done, err := b.Allow()
			if err != nil {
				t.Fatalf("probe refused: %v", err)
			}
			dones = append(dones, done)
		}
		_, err := b.Allow()
		wantOpenError(t, err, time.Minute) // the half-open timeout, which the probes took no time of

		dones[0](nil) // one success: two more needed, two in flight
		_, err = b.Allow()
		wantOpenError(t, err, time.Minute) // the half-open timeout, which the probes took no time of
		dones[1](context.Canceled)         // ignored: frees its slot
		done, err := b.Allow()
		if err != nil {
			t.Fatalf("a freed slot was not reused: %v", err)
		}
		dones[2](nil)
		wantState(t, b, breaker.HalfOpen)
		done(nil) // the third success
		wantState(t, b, breaker.Closed)
	})
}

// An outcome from a call admitted before a state change is ignored: it
// neither counts nor frees a probe slot.
func TestStaleOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		b := mustNew(t, breaker.WithConsecutiveFailures(2), breaker.WithOpenTimeout(time.Second),
			breaker.WithOnStateChange(rec.hook))
		slow1, _ := b.Allow() // admitted while closed
		slow2, _ := b.Allow()
		b.Do(ctx, fail)
		b.Do(ctx, fail)
		wantState(t, b, breaker.Open)
		slow1(nil) // would reset the count in closed; ignored in open
		wantState(t, b, breaker.Open)

		time.Sleep(time.Second)
		probe, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		slow2(nil) // a closed-era success must not close a half-open breaker ...
		wantState(t, b, breaker.HalfOpen)
		_, err = b.Allow()                 // ... nor free the probe slot
		wantOpenError(t, err, time.Minute) // the half-open timeout, which the probes took no time of

		probe(errBoom) // reopens
		time.Sleep(time.Second)
		probe2, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		probe(nil) // the first probe, called again: ignored anyway
		wantState(t, b, breaker.HalfOpen)
		probe2(nil)
		wantState(t, b, breaker.Closed)

		// A failure admitted in one closed spell does not count in the next.
		old, _ := b.Allow()
		b.Do(ctx, fail)
		b.Do(ctx, fail)
		time.Sleep(time.Second)
		b.Do(ctx, succeed)
		wantState(t, b, breaker.Closed)
		old(errBoom)
		b.Do(ctx, fail)
		wantState(t, b, breaker.Closed) // one counted failure of two needed
		rec.want(t, "closed->open", "open->half-open", "half-open->open", "open->half-open",
			"half-open->closed", "closed->open", "open->half-open", "half-open->closed")
	})
}

// A probe from an earlier half-open spell neither counts nor frees a slot
// in the current one.
func TestStaleProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithHalfOpenProbes(2),
			breaker.WithOpenTimeout(time.Second))
		b.Do(ctx, fail)
		time.Sleep(time.Second)
		p1, _ := b.Allow()
		p2, _ := b.Allow()
		p1(errBoom) // reopens
		time.Sleep(time.Second)
		q1, err1 := b.Allow()
		q2, err2 := b.Allow()
		if err1 != nil || err2 != nil {
			t.Fatalf("probes refused: %v, %v", err1, err2)
		}
		p2(nil) // stale
		_, err := b.Allow()
		wantOpenError(t, err, time.Minute) // the half-open timeout, which the probes took no time of
		q1(nil)
		wantState(t, b, breaker.HalfOpen) // one success of two, p2's did not count
		q2(nil)
		wantState(t, b, breaker.Closed)
	})
}

func TestDoneTwiceIsHarmless(t *testing.T) {
	b := mustNew(t, breaker.WithConsecutiveFailures(2))
	done, _ := b.Allow()
	done(errBoom)
	done(errBoom)
	wantState(t, b, breaker.Closed)
	done, _ = b.Allow()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { done(errBoom) })
	}
	wg.Wait()
	wantState(t, b, breaker.Open)
}

func TestPanicCountsAsFailureAndPropagates(t *testing.T) {
	b := mustNew(t, breaker.WithConsecutiveFailures(1))
	func() {
		defer func() {
			if r := recover(); r != "kaboom" {
				t.Fatalf("recovered %v, want the panic value unchanged", r)
			}
		}()
		b.Do(ctx, func(context.Context) error { panic("kaboom") })
	}()
	wantState(t, b, breaker.Open)
}

func TestDoWithDoneContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second))
		b.Do(ctx, fail)
		time.Sleep(time.Second)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		ran := false
		if err := b.Do(cctx, func(context.Context) error { ran = true; return nil }); err != context.Canceled || ran {
			t.Fatalf("Do = %v (ran %v), want context.Canceled without running fn", err, ran)
		}
		if err := b.Do(ctx, succeed); err != nil { // the probe slot is still free
			t.Fatal(err)
		}
		wantState(t, b, breaker.Closed)
	})
}

func TestRateMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		b := mustNew(t, breaker.WithFailureRate(0.5, 10*time.Second, 10), breaker.WithOpenTimeout(time.Second),
			breaker.WithOnStateChange(rec.hook))
		start := time.Now()
		for range 9 {
			b.Do(ctx, fail)
		}
		wantState(t, b, breaker.Closed) // 9 calls < minCalls
		time.Sleep(time.Until(start.Add(10 * time.Second)))
		// The nine failures, made in [0s, 1s), are gone at 10.0s.
		b.Do(ctx, fail)
		wantState(t, b, breaker.Closed)
		for range 4 {
			b.Do(ctx, succeed)
		}
		for range 4 {
			b.Do(ctx, fail)
		}
		wantState(t, b, breaker.Closed) // 5 of 9
		b.Do(ctx, succeed)
		wantState(t, b, breaker.Open) // 5 of 10 reaches 0.5
		time.Sleep(time.Second)
		b.Do(ctx, succeed)
		wantState(t, b, breaker.Closed)
		// Closing starts a fresh window.
		for range 9 {
			b.Do(ctx, fail)
		}
		wantState(t, b, breaker.Closed)
		b.Do(ctx, fail)
		wantState(t, b, breaker.Open)
		rec.want(t, "closed->open", "open->half-open", "half-open->closed", "closed->open")
	})
}

// The rate compares exact ratios: 7 failures in 100 calls reach 0.07, although
// 0.07*100 is 7.000000000000001 in floating point.
func TestRateIsExact(t *testing.T) {
	for _, tc := range []struct {
		rate                  float64
		calls, failures, want int
	}{
		{0.07, 100, 7, 1}, {0.07, 100, 6, 0}, {0.28, 25, 7, 1}, {0.1, 30, 3, 1}, {0.1, 30, 2, 0}, {0.3, 10, 3, 1}, {0.7, 10, 7, 1}, {0.7, 10, 6, 0}, {1, 5, 5, 1}, {1, 5, 4, 0},
	} {
		b := mustNew(t, breaker.WithFailureRate(tc.rate, time.Minute, tc.calls))
		for i := range tc.calls {
			if i < tc.calls-tc.failures {
				b.Do(ctx, succeed)
			} else {
				b.Do(ctx, fail)
			}
		}
		if got := b.State() == breaker.Open; got != (tc.want == 1) {
			t.Errorf("rate %v, %d of %d failed: open %v", tc.rate, tc.failures, tc.calls, got)
		}
	}
}

// A clock that goes backwards is time standing still: the breaker stays
// open, and RetryAfter never exceeds the timeout.
func TestClockBackwards(t *testing.T) {
	var c fakeClock
	c.Set(time.Hour)
	b := withClock(t, &c, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(30*time.Second))
	c.Set(time.Hour + 10*time.Second)
	b.Do(ctx, fail)
	c.Set(0)
	_, err := b.Allow()
	wantOpenError(t, err, 30*time.Second)
	c.Set(time.Hour + 39*time.Second)
	_, err = b.Allow()
	wantOpenError(t, err, time.Second)
	c.Set(time.Hour + 40*time.Second)
	wantState(t, b, breaker.HalfOpen)

	// In rate mode, outcomes from the past count in the current bucket.
	c.Set(0)
	r := withClock(t, &c, breaker.WithFailureRate(0.5, 10*time.Second, 3))
	c.Set(5 * time.Second)
	r.Do(ctx, succeed)
	c.Set(time.Second)
	r.Do(ctx, succeed)
	r.Do(ctx, fail)
	if tot, _ := r.WindowTotals(); tot != (window.Counts{3, 1}) {
		t.Fatalf("totals %v, want {3 1}", tot)
	}
	c.Set(15 * time.Second)
	r.Do(ctx, fail)
	if tot, _ := r.WindowTotals(); tot != (window.Counts{1, 1}) {
		t.Fatalf("at 15s: totals %v, want {1 1} (the bucket [5s, 6s) gone)", tot)
	}
}

// The hook runs without the lock: it may call State, Allow and Do, and the
// transitions those cause are delivered after it returns, in order.
func TestHookReentrancy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		var b *breaker.Breaker
		depth := 0
		hook := func(from, to breaker.State) {
			if depth++; depth > 1 {
				t.Errorf("hook for %v->%v called from within the hook", from, to)
			}
			defer func() { depth-- }()
			rec.hook(from, to)
			if got := b.State(); got != to && to != breaker.Open {
				t.Errorf("State() in the hook for %v->%v: %v", from, to, got)
			}
			if from == breaker.Open && to == breaker.HalfOpen && len(rec.got) == 2 {
				// Take the probe from inside the hook and fail it.
				if err := b.Do(ctx, fail); err != errBoom {
					t.Errorf("Do in the hook: %v", err)
				}
			}
			if to == breaker.Open {
				if _, err := b.Allow(); !errors.Is(err, breaker.ErrOpen) {
					t.Errorf("Allow in the hook: %v", err)
				}
			}
		}
		b = mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second),
			breaker.WithOnStateChange(hook))
		b.Do(ctx, fail)
		time.Sleep(time.Second)
		// State moves to half-open and returns that; before it returns, the
		// hook takes the probe and fails it.
		wantState(t, b, breaker.HalfOpen)
		wantState(t, b, breaker.Open)
		rec.want(t, "closed->open", "open->half-open", "half-open->open")
		time.Sleep(time.Second)
		b.Do(ctx, succeed)
		rec.want(t, "closed->open", "open->half-open", "half-open->open", "open->half-open", "half-open->closed")
	})
}

// A panicking hook propagates to the call that delivered; the breaker keeps
// working and the next transitions are still delivered.
func TestHookPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		b := mustNew(t, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second),
			breaker.WithOnStateChange(func(from, to breaker.State) {
				rec.hook(from, to)
				if to == breaker.Open && len(rec.got) == 1 {
					panic("hook")
				}
			}))
		func() {
			defer func() {
				if r := recover(); r != "hook" {
					t.Fatalf("recovered %v", r)
				}
			}()
			b.Do(ctx, fail)
		}()
		time.Sleep(time.Second)
		b.Do(ctx, succeed)
		rec.want(t, "closed->open", "open->half-open", "half-open->closed")
	})
}

// TestHookOrderUnderConcurrency drives transitions from 16 goroutines with a
// clock that moves on every read, and checks that the hook saw one chain of
// transitions, never two at once, in order (later instants, and a from that
// is the last to unless transitions were dropped before it), and that every
// transition was delivered or counted as dropped.
func TestHookOrderUnderConcurrency(t *testing.T) {
	var c fakeClock
	clock := func() time.Time { c.Advance(time.Millisecond); return c.Now() }
	var (
		mu      sync.Mutex
		last    = breaker.Closed
		lastAt  time.Time
		n       int
		dropped int64
		running atomic.Int32
	)
	hook := func(tr breaker.Transition) {
		if running.Add(1) != 1 {
			t.Error("the hook ran concurrently with itself")
		}
		runtime.Gosched() // widen the window for an overlapping delivery
		mu.Lock()
		if tr.From != last && tr.Dropped == 0 {
			t.Errorf("transition %d: %v->%v after a transition to %v, none dropped", n, tr.From, tr.To, last)
		}
		if tr.At.Before(lastAt) {
			t.Errorf("transition %d at %v, before the previous one at %v", n, tr.At, lastAt)
		}
		last, lastAt = tr.To, tr.At
		dropped += tr.Dropped
		n++
		mu.Unlock()
		running.Add(-1)
	}
	b, err := breaker.NewWithClock(clock, breaker.WithConsecutiveFailures(2), breaker.WithHalfOpenProbes(2),
		breaker.WithOpenTimeout(5*time.Millisecond), breaker.WithOnTransition(hook))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			for range 2000 {
				if rng.IntN(2) == 0 {
					b.Do(ctx, fail)
				} else {
					b.Do(ctx, succeed)
				}
			}
		})
	}
	wg.Wait()
	// Snapshot delivers what is still queued, and the transition its own
	// clock read may cause, after reading the counts: with nobody else
	// calling, that is everything.
	snap := b.Snapshot()
	mu.Lock()
	defer mu.Unlock()
	if snap.State != last {
		t.Fatalf("the hook's last transition went to %v, the breaker is %v", last, snap.State)
	}
	if n < 10 {
		t.Fatalf("only %d transitions: the test did not exercise the hook", n)
	}
	if int64(n)+dropped != snap.Transitions || dropped != snap.DroppedTransitions {
		t.Fatalf("%d delivered + %d dropped, want the %d transitions made (snapshot: %d dropped)",
			n, dropped, snap.Transitions, snap.DroppedTransitions)
	}
	t.Logf("%d transitions delivered, %d dropped", n, dropped)
}

// TestRateWindowProperty drives random outcomes and clock steps against a
// reference that keeps every outcome's timestamp: the window's totals are
// always ones the reference allows when outcomes expire anywhere between
// 0.9·window and window after they were recorded, and the breaker opens
// exactly when its totals reach the rate.
func TestRateWindowProperty(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (rand.NewPCG(seed, 0))", seed)
		}
	})
	type event struct {
		at     time.Duration
		failed bool
	}
	stepsTotal, opened := 0, 0
	defer func() { t.Logf("opened %d times, after %d steps on average", opened, stepsTotal/max(opened, 1)) }()
	for run := range 200 {
		width := time.Duration(1+rng.IntN(50)) * 100 * time.Millisecond
		rate := []float64{0.25, 0.5, 0.75, 1}[rng.IntN(4)]
		minCalls := 1 + rng.IntN(20)
		var c fakeClock
		c.Set(time.Duration(rng.Int64N(int64(time.Hour))))
		origin := c.Now().Sub(testutil.Epoch)
		b := withClock(t, &c, breaker.WithFailureRate(rate, width, minCalls))
		failP := rate * (0.3 + 0.6*rng.Float64())
		var events []event
		for step := range 300 {
			if rng.IntN(3) == 0 {
				c.Advance(time.Duration(rng.Int64N(int64(width / 4))))
			}
			failed := rng.Float64() < failP
			now := c.Now().Sub(testutil.Epoch) - origin
			if failed {
				b.Do(ctx, fail)
			} else {
				b.Do(ctx, succeed)
			}
			events = append(events, event{now, failed})
			var lo, hi window.Counts
			keep := events[:0]
			for _, e := range events {
				age := now - e.at
				if age >= width {
					continue
				}
				keep = append(keep, e)
				f := int64(0)
				if e.failed {
					f = 1
				}
				hi[0], hi[1] = hi[0]+1, hi[1]+f
				if age <= width*9/10 {
					lo[0], lo[1] = lo[0]+1, lo[1]+f
				}
			}
			events = keep
			tot, consistent := b.WindowTotals()
			if !consistent {
				t.Fatalf("run %d step %d: running totals differ from the bucket sums", run, step)
			}
			if b.State() == breaker.Open {
				if !(tot[0] >= int64(minCalls) && float64(tot[1])/float64(tot[0]) >= rate) {
					t.Fatalf("run %d step %d: opened at totals %v (rate %v, min %d)", run, step, tot, rate, minCalls)
				}
				stepsTotal += step
				opened++
				break // the window's job is done; the next run starts afresh
			}
			for i := range tot {
				if tot[i] < lo[i] || tot[i] > hi[i] {
					t.Fatalf("run %d step %d (window %v, at %v): totals %v outside [%v, %v]",
						run, step, width, now, tot, lo, hi)
				}
			}
			if tot[0] >= int64(minCalls) && float64(tot[1])/float64(tot[0]) >= rate {
				t.Fatalf("run %d step %d: still closed at totals %v (rate %v, min %d)", run, step, tot, rate, minCalls)
			}
		}
	}
}

// TestStressRateWindow records outcomes from 16 goroutines with a clock that
// rotates buckets constantly, and checks that the running totals always equal
// the bucket sums. Run it with -race.
func TestStressRateWindow(t *testing.T) {
	var c fakeClock
	clock := func() time.Time { c.Advance(time.Millisecond); return c.Now() }
	b, err := breaker.NewWithClock(clock, breaker.WithFailureRate(1, 100*time.Millisecond, 1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var bad atomic.Int64
	for g := range 16 {
		wg.Go(func() {
			for i := range 3000 {
				if (g+i)%2 == 0 {
					b.Do(ctx, fail)
				} else {
					b.Do(ctx, succeed)
				}
				if i%16 == 0 {
					if _, ok := b.WindowTotals(); !ok {
						bad.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	if _, ok := b.WindowTotals(); !ok || bad.Load() != 0 {
		t.Fatalf("running totals differed from the bucket sums (%d times)", bad.Load())
	}
}

func TestDoDoesNotAllocate(t *testing.T) {
	for name, b := range map[string]*breaker.Breaker{
		"count": mustNew(t),
		"rate":  mustNew(t, breaker.WithFailureRate(0.5, time.Minute, 10)),
		"slow":  mustNew(t, breaker.WithSlowCallThreshold(time.Hour)),
		"hook":  mustNew(t, breaker.WithOnTransition(func(breaker.Transition) {})),
	} {
		if n := testing.AllocsPerRun(1000, func() { b.Do(ctx, succeed) }); n != 0 {
			t.Errorf("%s mode: Do allocates %v times per call", name, n)
		}
	}
}

func BenchmarkDo(b *testing.B) {
	br := mustNew(b)
	for b.Loop() {
		br.Do(ctx, succeed)
	}
}

func BenchmarkDoRateMode(b *testing.B) {
	br := mustNew(b, breaker.WithFailureRate(0.5, 10*time.Second, 20))
	for b.Loop() {
		br.Do(ctx, succeed)
	}
}

func BenchmarkAllow(b *testing.B) {
	br := mustNew(b)
	for b.Loop() {
		done, _ := br.Allow()
		done(nil)
	}
}

func BenchmarkDoOpen(b *testing.B) {
	br := mustNew(b, breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Hour))
	br.Do(ctx, fail)
	for b.Loop() {
		br.Do(ctx, succeed)
	}
}

func BenchmarkDoParallel(b *testing.B) {
	br := mustNew(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			br.Do(ctx, succeed)
		}
	})
}

// BenchmarkBaseline is a mutex taken twice around the call: the least a
// locking breaker can cost.
func BenchmarkBaseline(b *testing.B) {
	var mu sync.Mutex
	n := 0
	for b.Loop() {
		mu.Lock()
		n++
		mu.Unlock()
		succeed(ctx)
		mu.Lock()
		n--
		mu.Unlock()
	}
}
