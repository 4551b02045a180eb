package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

var (
	ctx     = context.Background()
	errBoom = errors.New("boom")
)

// script returns an fn that returns errs in turn (nil once they run out)
// and records the instant of each attempt.
type script struct {
	errs []error
	at   []time.Time
}

func (s *script) fn(context.Context) error {
	s.at = append(s.at, time.Now())
	if i := len(s.at) - 1; i < len(s.errs) {
		return s.errs[i]
	}
	return nil
}

func (s *script) attempts() int { return len(s.at) }

// gaps returns the time between consecutive attempts.
func (s *script) gaps() []time.Duration {
	var g []time.Duration
	for i := 1; i < len(s.at); i++ {
		g = append(g, s.at[i].Sub(s.at[i-1]))
	}
	return g
}

func mustPolicy(t testing.TB, opts ...retry.Option) *retry.Policy {
	t.Helper()
	p, err := retry.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantError fails the test unless err is an *Error with reason after
// attempts, matching the last error too.
func wantError(t *testing.T, err error, reason error, attempts int, last error) *retry.Error {
	t.Helper()
	var re *retry.Error
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T), want a *retry.Error", err, err)
	}
	if re.Reason != reason || re.Attempts != attempts || !errors.Is(err, reason) || !errors.Is(err, last) {
		t.Fatalf("error %#v, want reason %v after %d attempts, matching %v", re, reason, attempts, last)
	}
	return re
}

type hinted struct{ d time.Duration }

func (h hinted) Error() string                     { return fmt.Sprintf("retry after %v", h.d) }
func (h hinted) RetryAfter() (time.Duration, bool) { return h.d, true }
func rateLimited(d time.Duration) error            { return &permits.RateLimitError{RetryAfter: d} }
func openBreaker(d time.Duration) error {
	return &breaker.OpenError{State: breaker.Open, RetryAfter: d}
}
func wrapped(format string, err error) error { return fmt.Errorf(format, err) }

var _ retry.RetryAfterer = hinted{}

func TestInvalidConfig(t *testing.T) {
	for name, opts := range map[string][]retry.Option{
		"nil option":         {nil},
		"nil among others":   {retry.WithMaxAttempts(2), nil},
		"zero attempts":      {retry.WithMaxAttempts(0)},
		"negative base":      {retry.WithBackoff(-1, time.Second)},
		"max below base":     {retry.WithBackoff(time.Second, time.Millisecond)},
		"negative elapsed":   {retry.WithMaxElapsed(-time.Second)},
		"nil classifier":     {retry.WithClassifier(nil)},
		"last option counts": {retry.WithMaxAttempts(5), retry.WithMaxAttempts(-1)},
	} {
		if p, err := retry.New(opts...); !errors.Is(err, permits.ErrInvalidConfig) || p != nil {
			t.Errorf("%s: New = %v, %v; want ErrInvalidConfig", name, p, err)
		}
		ran := false
		if err := retry.Do(ctx, func(context.Context) error { ran = true; return nil }, opts...); !errors.Is(err, permits.ErrInvalidConfig) || ran {
			t.Errorf("%s: Do = %v (ran %v); want ErrInvalidConfig without running fn", name, err, ran)
		}
	}
	for name, opts := range map[string][]retry.Option{
		"one attempt":    {retry.WithMaxAttempts(1)},
		"no wait":        {retry.WithBackoff(0, 0)},
		"no time limit":  {retry.WithMaxElapsed(0)},
		"no budget":      {retry.WithBudget(nil)},
		"last one wins":  {retry.WithMaxAttempts(0), retry.WithMaxAttempts(2)},
		"nil hook":       {retry.WithOnRetry(nil)},
		"classifier set": {retry.WithClassifier(nil), retry.WithClassifier(retry.DefaultClassifier)},
	} {
		if _, err := retry.New(opts...); err != nil {
			t.Errorf("%s: rejected: %v", name, err)
		}
	}
}

func TestFirstAttemptSucceeds(t *testing.T) {
	s := &script{}
	if err := retry.Do(ctx, s.fn); err != nil || s.attempts() != 1 {
		t.Fatalf("Do = %v after %d attempts", err, s.attempts())
	}
}

func TestRetriesUntilSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{errs: []error{errBoom, io.EOF}}
		if err := retry.Do(ctx, s.fn); err != nil || s.attempts() != 3 {
			t.Fatalf("Do = %v after %d attempts, want nil after 3", err, s.attempts())
		}
	})
}

func TestAttemptsExhausted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{errs: []error{errBoom, errBoom, io.EOF, errBoom}}
		err := retry.Do(ctx, s.fn, retry.WithMaxAttempts(3))
		wantError(t, err, retry.ErrAttemptsExhausted, 3, io.EOF)
		if s.attempts() != 3 {
			t.Fatalf("%d attempts", s.attempts())
		}
		if errors.Is(err, errBoom) {
			t.Fatal("an earlier attempt's error shows through: only the last one should")
		}
		if got, want := err.Error(), "retry: attempts exhausted after 3 attempts: EOF"; got != want {
			t.Fatalf("%q, want %q", got, want)
		}
		s = &script{errs: []error{errBoom}}
		err = retry.Do(ctx, s.fn, retry.WithMaxAttempts(1))
		wantError(t, err, retry.ErrAttemptsExhausted, 1, errBoom)
		if got, want := err.Error(), "retry: attempts exhausted after 1 attempt: boom"; got != want {
			t.Fatalf("%q, want %q", got, want)
		}
	})
}

func TestDefaultClassifier(t *testing.T) {
	for err, want := range map[error]retry.Class{
		errBoom:                                        retry.Transient,
		context.DeadlineExceeded:                       retry.Transient,
		rateLimited(time.Second):                       retry.Transient,
		openBreaker(time.Second):                       retry.Transient,
		context.Canceled:                               retry.Permanent,
		retry.MarkPermanent(errBoom):                   retry.Permanent,
		wrapped("x: %w", retry.MarkPermanent(errBoom)): retry.Permanent,
		permits.ErrClosed:                              retry.Permanent,
		permits.InvalidCost(0):                         retry.Permanent,
		permits.CostExceedsCapacity(9, 1):              retry.Permanent,
	} {
		if got := retry.DefaultClassifier(err); got != want {
			t.Errorf("%v: %v, want %v", err, got, want)
		}
	}
	if retry.MarkPermanent(nil) != nil {
		t.Error("MarkPermanent(nil) is not nil")
	}
	if retry.Transient.String() != "transient" || retry.Permanent.String() != "permanent" {
		t.Error("Class.String")
	}
}

// A Permanent error is returned as it is, at once.
func TestPermanentIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		perm := retry.MarkPermanent(errBoom)
		s := &script{errs: []error{io.EOF, perm}}
		err := retry.Do(ctx, s.fn, retry.WithBackoff(time.Second, time.Second))
		if err != perm || !errors.Is(err, errBoom) || s.attempts() != 2 {
			t.Fatalf("Do = %v after %d attempts, want the permanent error after 2", err, s.attempts())
		}
		// A custom classifier: EOF is permanent, at once.
		s = &script{errs: []error{io.EOF}}
		begin := time.Now()
		err = retry.Do(ctx, s.fn, retry.WithClassifier(func(err error) retry.Class {
			if err == io.EOF {
				return retry.Permanent
			}
			return retry.Transient
		}))
		if err != io.EOF || s.attempts() != 1 || time.Since(begin) != 0 {
			t.Fatalf("Do = %v after %d attempts and %v", err, s.attempts(), time.Since(begin))
		}
	})
}

// Do waits at least what the error asks for, whichever way it asks, and
// the longest ask when several are in the chain.
func TestWaitsAtLeastTheHint(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want time.Duration
	}{
		"permits":      {rateLimited(3 * time.Second), 3 * time.Second},
		"breaker":      {openBreaker(4 * time.Second), 4 * time.Second},
		"RetryAfterer": {hinted{5 * time.Second}, 5 * time.Second},
		"wrapped":      {wrapped("call: %w", hinted{6 * time.Second}), 6 * time.Second},
		"longest":      {errors.Join(rateLimited(2*time.Second), hinted{7 * time.Second}, openBreaker(time.Second)), 7 * time.Second},
		"negative":     {hinted{-time.Hour}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			if d, ok := retry.Hint(tc.err); !ok || d != tc.want {
				t.Fatalf("Hint = %v, %v; want %v", d, ok, tc.want)
			}
			synctest.Test(t, func(t *testing.T) {
				s := &script{errs: []error{tc.err}}
				// A back-off whose jitter stays below any of the hints.
				if err := retry.Do(ctx, s.fn, retry.WithBackoff(0, 0)); err != nil {
					t.Fatal(err)
				}
				if g := s.gaps(); len(g) != 1 || g[0] != tc.want {
					t.Fatalf("waited %v, want %v", g, tc.want)
				}
			})
		})
	}
	if _, ok := retry.Hint(errBoom); ok {
		t.Fatal("a plain error has a hint")
	}
}

// The hint raises the wait; it does not replace a longer back-off.
func TestHintBelowBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{errs: []error{hinted{time.Millisecond}, hinted{time.Millisecond}, hinted{time.Millisecond}}}
		err := retry.Do(ctx, s.fn, retry.WithMaxAttempts(4), retry.WithBackoff(time.Second, 10*time.Second), retry.WithJitterSeed(1))
		if err != nil {
			t.Fatal(err)
		}
		for k, g := range s.gaps() {
			if ceil := time.Second << k; g < time.Millisecond || g > ceil {
				t.Fatalf("wait %d: %v, want it in [1ms, %v]", k+1, g, ceil)
			}
		}
	})
}

func TestContextDoneBeforeFirstAttempt(t *testing.T) {
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	s := &script{}
	if err := retry.Do(cctx, s.fn); err != context.Canceled || s.attempts() != 0 {
		t.Fatalf("Do = %v after %d attempts, want context.Canceled without an attempt", err, s.attempts())
	}
	p := mustPolicy(t)
	if err := p.Do(cctx, s.fn); err != context.Canceled || s.attempts() != 0 {
		t.Fatalf("Policy.Do = %v after %d attempts", err, s.attempts())
	}
}

// Do stops waiting the moment ctx is cancelled.
func TestCancelDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		start := time.Now()
		time.AfterFunc(1500*time.Millisecond, cancel)
		s := &script{errs: []error{hinted{time.Hour}}}
		err := retry.Do(cctx, s.fn, retry.WithMaxElapsed(0))
		wantError(t, err, context.Canceled, 1, hinted{time.Hour})
		if d := time.Since(start); d != 1500*time.Millisecond {
			t.Fatalf("returned after %v, want at the cancellation (1.5s)", d)
		}
	})
}

// ctx ending during an attempt stops Do after it, without a retry.
func TestCancelDuringAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		n := 0
		err := retry.Do(cctx, func(context.Context) error { n++; cancel(); return errBoom })
		wantError(t, err, context.Canceled, 1, errBoom)
		if n != 1 {
			t.Fatalf("%d attempts", n)
		}
	})
}

// A wait that would end at or past ctx's deadline is not started: Do
// returns at once, with an error matching both ErrOutOfTime and
// context.DeadlineExceeded.
func TestWaitPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		start := time.Now()
		s := &script{errs: []error{hinted{time.Second}, hinted{10 * time.Second}}}
		err := retry.Do(dctx, s.fn, retry.WithBackoff(0, 0))
		re := wantError(t, err, retry.ErrOutOfTime, 2, hinted{10 * time.Second})
		if !re.Deadline || re.Wait != 10*time.Second || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%#v: want Deadline, Wait 10s, matching context.DeadlineExceeded", re)
		}
		if d := time.Since(start); d != time.Second {
			t.Fatalf("returned after %v, want 1s (the first wait, then at once)", d)
		}
		if got, want := err.Error(), "retry: no time left for the wait (10s, past ctx's deadline) after 2 attempts: retry after 10s"; got != want {
			t.Fatalf("%q, want %q", got, want)
		}
		// A wait ending just before the deadline is made.
		s = &script{errs: []error{hinted{9*time.Second - time.Nanosecond}}}
		if err := retry.Do(dctx, s.fn, retry.WithBackoff(0, 0)); err != nil {
			t.Fatalf("a wait that fits: %v", err)
		}
	})
}

// The retry time limit counts from the end of the first attempt.
func TestMaxElapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := func(err error) func(context.Context) error {
			return func(context.Context) error { time.Sleep(time.Minute); return err }
		}
		start := time.Now()
		n := 0
		err := retry.Do(ctx, func(c context.Context) error {
			n++
			return slow(hinted{3 * time.Second})(c)
		}, retry.WithMaxElapsed(time.Minute+5*time.Second), retry.WithMaxAttempts(10), retry.WithBackoff(0, 0))
		// First attempt ends at 1m; the retry waits 3s (fits: 3s <= 65s) and
		// runs to 2m4s... its successor's wait would end at 2m7s, past 2m5s.
		re := wantError(t, err, retry.ErrOutOfTime, 2, hinted{3 * time.Second})
		if re.Deadline || errors.Is(err, context.DeadlineExceeded) {
			t.Fatal("the limit was WithMaxElapsed, not a deadline")
		}
		if d := time.Since(start); d != 2*time.Minute+3*time.Second || n != 2 {
			t.Fatalf("returned after %v and %d attempts", d, n)
		}
		if got, want := err.Error(), "retry: no time left for the wait (3s, past the retry time limit) after 2 attempts: retry after 3s"; got != want {
			t.Fatalf("%q, want %q", got, want)
		}
		// A wait ending exactly at the limit is allowed.
		s := &script{errs: []error{hinted{5 * time.Second}}}
		if err := retry.Do(ctx, s.fn, retry.WithMaxElapsed(5*time.Second), retry.WithBackoff(0, 0)); err != nil {
			t.Fatalf("a wait ending at the limit: %v", err)
		}
	})
}

// Every Do deposits once; every retry withdraws before its wait; a refusal
// ends Do at once.
func TestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.WithName("api"), budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0.5))
		if err != nil {
			t.Fatal(err)
		}
		p := mustPolicy(t, retry.WithBudget(b), retry.WithMaxAttempts(10), retry.WithBackoff(0, 0))
		for range 4 {
			if err := p.Do(ctx, (&script{}).fn); err != nil {
				t.Fatal(err)
			}
		}
		if s := b.Stats(); s.Deposits != 4 || s.Withdrawals != 0 {
			t.Fatalf("after 4 successes: %+v", s)
		}
		// Balance 2: two retries, then the third is refused.
		s := &script{errs: []error{errBoom, errBoom, errBoom, errBoom}}
		start := time.Now()
		err = p.Do(ctx, s.fn)
		re := wantError(t, err, retry.ErrBudgetExhausted, 3, errBoom)
		if re.Budget != "api" || time.Since(start) != 0 {
			t.Fatalf("%#v after %v", re, time.Since(start))
		}
		if got, want := err.Error(), `retry: retry budget exhausted ("api") after 3 attempts: boom`; got != want {
			t.Fatalf("%q, want %q", got, want)
		}
		if st := b.Stats(); st.Deposits != 5 || st.Withdrawals != 2 || st.Refusals != 1 {
			t.Fatalf("budget %+v, want 5 deposits, 2 withdrawals, 1 refusal", st)
		}
		// A retry that is not made for lack of time withdraws nothing.
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		for range 10 {
			b.Deposit()
		}
		before := b.Stats().Withdrawals
		err = p.Do(dctx, (&script{errs: []error{hinted{time.Hour}}}).fn)
		wantError(t, err, retry.ErrOutOfTime, 1, hinted{time.Hour})
		if got := b.Stats().Withdrawals; got != before {
			t.Fatalf("withdrawals %d, want %d", got, before)
		}
	})
}

// The hook sees each retry before its wait, with the error it discards.
func TestOnRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []retry.Event
		var at []time.Time
		s := &script{errs: []error{hinted{time.Second}, hinted{2 * time.Second}}}
		err := retry.Do(ctx, s.fn, retry.WithBackoff(0, 0), retry.WithOnRetry(func(e retry.Event) {
			events = append(events, e)
			at = append(at, time.Now())
		}))
		if err != nil {
			t.Fatal(err)
		}
		want := []retry.Event{{1, hinted{time.Second}, time.Second}, {2, hinted{2 * time.Second}, 2 * time.Second}}
		if fmt.Sprint(events) != fmt.Sprint(want) {
			t.Fatalf("events %v, want %v", events, want)
		}
		for i := range at {
			if !at[i].Equal(s.at[i]) {
				t.Fatalf("hook %d at %v, attempt %d ended at %v: the hook runs before the wait", i, at[i], i, s.at[i])
			}
		}
	})
}

// The hook's time counts towards the wait: a hook shorter than the wait
// does not delay the retry, and the retry follows a longer one at once.
func TestSlowOnRetryHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct{ hook, want time.Duration }{
			{500 * time.Millisecond, time.Second},
			{3 * time.Second, 3 * time.Second},
		} {
			s := &script{errs: []error{hinted{time.Second}}}
			err := retry.Do(ctx, s.fn, retry.WithBackoff(0, 0),
				retry.WithOnRetry(func(retry.Event) { time.Sleep(tc.hook) }))
			if err != nil {
				t.Fatal(err)
			}
			if g := s.gaps(); len(g) != 1 || g[0] != tc.want {
				t.Fatalf("hook taking %v: waited %v, want %v", tc.hook, g, tc.want)
			}
		}
	})
}

// The back-off doubles from the base up to the max, with full jitter: each
// wait is in [0, ceiling], and a seed makes the waits repeat.
func TestBackoffAndJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const attempts = 40
		errs := make([]error, attempts-1)
		for i := range errs {
			errs[i] = errBoom
		}
		run := func(p *retry.Policy) []time.Duration {
			s := &script{errs: errs}
			if err := p.Do(ctx, s.fn); err != nil {
				t.Fatal(err)
			}
			return s.gaps()
		}
		opts := []retry.Option{retry.WithMaxAttempts(attempts), retry.WithBackoff(100*time.Millisecond, 2*time.Second),
			retry.WithMaxElapsed(0), retry.WithJitterSeed(42)}
		p := mustPolicy(t, opts...)
		first, second := run(p), run(p)
		again := run(mustPolicy(t, opts...))
		if fmt.Sprint(first) != fmt.Sprint(again) {
			t.Fatalf("the same seed gave %v and %v", first, again)
		}
		if fmt.Sprint(first) == fmt.Sprint(second) {
			t.Fatal("two Do calls of one Policy drew the same waits")
		}
		var sum time.Duration
		for k, g := range append(first, second...) {
			ceil := 100 * time.Millisecond
			for range k % (attempts - 1) {
				ceil = min(2*ceil, 2*time.Second)
			}
			if g < 0 || g > ceil {
				t.Fatalf("wait %d: %v, want it in [0, %v]", k, g, ceil)
			}
			sum += g
		}
		// Full jitter averages half the ceiling: 2 × (0.05+0.1+0.2+0.4+0.8)s
		// plus 2 × 34 × 1s for the capped ones, 71.1s; allow a wide margin.
		if sum < 50*time.Second || sum > 95*time.Second {
			t.Fatalf("waits sum to %v, want about 71s", sum)
		}
	})
}

// Huge attempt numbers neither overflow the back-off nor panic.
func TestBackoffDoesNotOverflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		err := retry.Do(ctx, func(context.Context) error { n++; return errBoom },
			retry.WithMaxAttempts(200), retry.WithBackoff(time.Nanosecond, time.Microsecond), retry.WithMaxElapsed(0))
		wantError(t, err, retry.ErrAttemptsExhausted, 200, errBoom)
		if n != 200 {
			t.Fatalf("%d attempts", n)
		}
	})
}

// A breaker's refusal is waited out, not hammered: with a breaker open for
// 30s, the retry comes when the breaker admits a probe.
func TestRetryThroughABreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := breaker.New(breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		down := true
		calls := 0
		start := time.Now()
		err = retry.Do(ctx, func(ctx context.Context) error {
			return br.Do(ctx, func(context.Context) error {
				calls++
				if down {
					down = false
					return errBoom
				}
				return nil
			})
		}, retry.WithMaxAttempts(5), retry.WithBackoff(0, 0))
		if err != nil || calls != 2 {
			t.Fatalf("Do = %v after %d calls", err, calls)
		}
		// Attempt 1 fails and opens the breaker; attempt 2 is refused with
		// RetryAfter 30s at once (the back-off is 0); attempt 3 is the probe.
		if d := time.Since(start); d != 30*time.Second {
			t.Fatalf("succeeded after %v, want 30s", d)
		}
	})
}

func TestDoesNotAllocate(t *testing.T) {
	p := mustPolicy(t, retry.WithMaxAttempts(5), retry.WithBackoff(time.Millisecond, time.Second))
	ok := func(context.Context) error { return nil }
	attempts := retry.WithMaxAttempts(3)
	for name, f := range map[string]func(){
		"Policy.Do":             func() { p.Do(ctx, ok) },
		"Do":                    func() { retry.Do(ctx, ok) },
		"Do with built options": func() { retry.Do(ctx, ok, attempts) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocations per first attempt that succeeds", name, n)
		}
	}
}
