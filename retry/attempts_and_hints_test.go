package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// zzAlways returns an fn that fails n times with err, then succeeds.
func zzFailing(n int, err error) *script {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return &script{errs: errs}
}

// The documented mapping of WithJitterSeed: "the n-th Do of a Policy (from
// 0) draws from PCG(seed, n)". A Do whose first attempt succeeds is still a
// Do of the Policy, so the Do after it is the 1st, not the 0th.
func TestJitterSeedStreamIsTheNthDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const seed = 7
		opts := []retry.Option{retry.WithJitterSeed(seed), retry.WithMaxAttempts(2),
			retry.WithBackoff(time.Second, time.Second), retry.WithMaxElapsed(0)}
		// Reference: the gap of a Do drawing from PCG(seed, n) for ceiling 1s.
		ref := func(n uint64) time.Duration {
			p := rand.NewPCG(seed, n)
			hi, _ := bits.Mul64(p.Uint64(), uint64(time.Second)+1)
			return time.Duration(hi)
		}
		// Sanity: the 0th Do of a fresh Policy draws PCG(seed, 0).
		p0 := mustPolicy(t, opts...)
		s0 := zzFailing(1, errBoom)
		if err := p0.Do(ctx, s0.fn); err != nil {
			t.Fatal(err)
		}
		if g := s0.gaps()[0]; g != ref(0) {
			t.Fatalf("0th Do waited %v, want PCG(seed,0)'s %v (reference broken?)", g, ref(0))
		}

		p := mustPolicy(t, opts...)
		if err := p.Do(ctx, func(context.Context) error { return nil }); err != nil { // Do #0
			t.Fatal(err)
		}
		s := zzFailing(1, errBoom) // Do #1
		if err := p.Do(ctx, s.fn); err != nil {
			t.Fatal(err)
		}
		if g := s.gaps()[0]; g != ref(1) {
			t.Fatalf("the 1st Do (after a 0th that succeeded at once) waited %v = PCG(seed,0)'s %v? want PCG(seed,1)'s %v",
				g, ref(0), ref(1))
		}
	})
}

// Attempts, no sleep after the last attempt, and the final error wraps the
// last attempt's error (errors.Is and errors.As).
func TestAttemptsAndNoSleepAfterLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		last := &permits.RateLimitError{RetryAfter: 3 * time.Second}
		s := &script{errs: []error{errBoom, errBoom, errBoom, fmt.Errorf("wrapped: %w", last)}}
		start := time.Now()
		err := retry.Do(ctx, s.fn, retry.WithMaxAttempts(4), retry.WithBackoff(time.Millisecond, time.Millisecond))
		end := time.Now()
		wantError(t, err, retry.ErrAttemptsExhausted, 4, last)
		if s.attempts() != 4 {
			t.Fatalf("%d attempts, want 4", s.attempts())
		}
		if !s.at[3].Equal(end) {
			t.Fatalf("Do returned %v after the last attempt began: it slept after the last attempt", end.Sub(s.at[3]))
		}
		var rl *permits.RateLimitError
		if !errors.As(err, &rl) || rl != last {
			t.Fatalf("errors.As did not find the last attempt's *RateLimitError")
		}
		if !errors.Is(err, permits.ErrRateLimited) {
			t.Fatal("errors.Is(err, ErrRateLimited) is false")
		}
		_ = start
	})
}

// Hints are never undercut, from each of the three sources, even when far
// above the back-off cap, and the wait is exactly the hint when the back-off
// is 0.
func TestHintsNotUndercut(t *testing.T) {
	for name, e := range map[string]error{
		"RetryAfterer":         hinted{7 * time.Second},
		"wrapped RetryAfterer": fmt.Errorf("http: %w", hinted{7 * time.Second}),
		"RateLimitError":       rateLimited(7 * time.Second),
		"RetryLater":           permits.RetryLater(7 * time.Second),
		"wrapped RetryLater":   fmt.Errorf("x: %w", permits.RetryLater(7*time.Second)),
		"OpenError":            fmt.Errorf("x: %w", openBreaker(7*time.Second)),
		"joined, longest wins": errors.Join(hinted{time.Second}, rateLimited(7*time.Second), openBreaker(2*time.Second)),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				for _, bo := range [][2]time.Duration{{0, 0}, {time.Millisecond, time.Second}} {
					s := zzFailing(2, e)
					err := retry.Do(ctx, s.fn, retry.WithMaxAttempts(3), retry.WithBackoff(bo[0], bo[1]))
					if err != nil {
						t.Fatal(err)
					}
					for i, g := range s.gaps() {
						if g != 7*time.Second {
							t.Fatalf("backoff %v: gap %d %v, want exactly 7s (hint, backoff below it)", bo, i, g)
						}
					}
				}
			})
		})
	}
}

// A RetryAfterer in the chain that has no hint must not hide another that
// has one ("the longest of a RetryAfterer in the chain").
type noHint struct{ err error }

func (n noHint) Error() string                     { return "no hint: " + n.err.Error() }
func (n noHint) Unwrap() error                     { return n.err }
func (n noHint) RetryAfter() (time.Duration, bool) { return 0, false }

func TestHintBehindAHintlessRetryAfterer(t *testing.T) {
	err := noHint{hinted{5 * time.Second}}
	if d, ok := retry.Hint(err); !ok || d != 5*time.Second {
		t.Errorf("Hint(%v) = %v, %v; want 5s, true", err, d, ok)
	}
	err2 := errors.Join(hinted{time.Second}, hinted{5 * time.Second})
	if d, ok := retry.Hint(err2); !ok || d != 5*time.Second {
		t.Errorf("Hint(join of 1s and 5s RetryAfterers) = %v, %v; want the longest, 5s", d, ok)
	}
	err3 := errors.Join(rateLimited(time.Second), rateLimited(5*time.Second))
	if d, ok := retry.Hint(err3); !ok || d != 5*time.Second {
		t.Errorf("Hint(join of 1s and 5s RateLimitErrors) = %v, %v; want the longest, 5s", d, ok)
	}
	// What Do makes of it: the 5s hint must not be undercut.
	synctest.Test(t, func(t *testing.T) {
		s := zzFailing(1, err)
		if e := retry.Do(ctx, s.fn, retry.WithBackoff(0, 0)); e != nil {
			t.Fatal(e)
		}
		if g := s.gaps()[0]; g < 5*time.Second {
			t.Errorf("Do retried after %v, undercutting the 5s hint in the chain", g)
		}
	})
}

// Budget: one deposit per Do, one withdrawal per retry, stop at once with
// ErrBudgetExhausted, and the error names the budget and wraps the last.
func TestBudgetStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.WithName("b"), budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(1))
		if err != nil {
			t.Fatal(err)
		}
		p := mustPolicy(t, retry.WithBudget(b), retry.WithMaxAttempts(10), retry.WithBackoff(0, 0))
		s := zzFailing(100, io.EOF)
		start := time.Now()
		err = p.Do(ctx, s.fn)
		re := wantError(t, err, retry.ErrBudgetExhausted, 2, io.EOF)
		if re.Budget != "b" || s.attempts() != 2 || time.Since(start) != 0 {
			t.Fatalf("%#v after %d attempts, %v", re, s.attempts(), time.Since(start))
		}
		st := b.Stats()
		if st.Deposits != 1 || st.Withdrawals != 1 || st.Refusals != 1 {
			t.Fatalf("stats %+v, want 1 deposit, 1 withdrawal, 1 refusal", st)
		}
	})
}

// Cancel between attempts: Do returns at once with ctx's error, wrapping the
// last one, and makes no further attempt.
func TestCancelBetweenAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c2, cancel2 := context.WithCancel(ctx)
		defer cancel2()
		s2 := zzFailing(10, hinted{time.Second})
		go func() { time.Sleep(1500 * time.Millisecond); cancel2() }()
		start := time.Now()
		err := retry.Do(c2, s2.fn, retry.WithMaxAttempts(10), retry.WithMaxElapsed(0))
		wantError(t, err, context.Canceled, 2, hinted{time.Second})
		if d := time.Since(start); d != 1500*time.Millisecond {
			t.Fatalf("returned after %v, want 1.5s", d)
		}
		if s2.attempts() != 2 {
			t.Fatalf("%d attempts", s2.attempts())
		}
	})
}

// Retry through a breaker in half-open with several probes and a budget,
// many goroutines whose calls all fail (so every admitted call is a probe,
// and a probe takes less than the open timeout): never more than 2 at once.
func TestRetryConcurrentThroughBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := breaker.New(breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second),
			breaker.WithHalfOpenProbes(2))
		if err != nil {
			t.Fatal(err)
		}
		br.Do(ctx, func(context.Context) error { return errBoom })
		var mu sync.Mutex
		inflight, maxIn := 0, 0
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				retry.Do(ctx, func(ctx context.Context) error {
					return br.Do(ctx, func(context.Context) error {
						mu.Lock()
						inflight++
						maxIn = max(maxIn, inflight)
						mu.Unlock()
						time.Sleep(100 * time.Millisecond)
						mu.Lock()
						inflight--
						mu.Unlock()
						return errBoom
					})
				}, retry.WithMaxAttempts(50), retry.WithBackoff(time.Millisecond, 10*time.Millisecond))
			}()
		}
		wg.Wait()
		if maxIn > 2 {
			t.Fatalf("%d probes at once in half-open, want at most 2", maxIn)
		}
	})
}

// TestCancelInHookWithoutWait: ctx ending in the OnRetry hook, with no wait to make: Do must stop (it
// "stops at once when ctx ends") rather than run fn with a done ctx.
func TestCancelInHookWithoutWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, cancel := context.WithCancel(ctx)
		defer cancel()
		s := zzFailing(10, io.EOF)
		err := retry.Do(c, s.fn, retry.WithMaxAttempts(5), retry.WithBackoff(0, 0),
			retry.WithOnRetry(func(retry.Event) { cancel() }))
		if s.attempts() != 1 {
			t.Errorf("fn ran %d times; the retry after ctx ended in the hook should not run (err %v)", s.attempts(), err)
		}
		var re *retry.Error
		if !errors.As(err, &re) || !errors.Is(err, context.Canceled) {
			t.Errorf("err %v (%T), want a *retry.Error matching context.Canceled", err, err)
		}
	})
}

// The retry time limit: a wait that would end exactly at the limit is made,
// one that would end past it is not, at once, with the wait needed.
func TestMaxElapsedBoundary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &script{errs: []error{hinted{time.Second}, hinted{time.Second}, hinted{time.Second}}}
		start := time.Now()
		err := retry.Do(ctx, s.fn, retry.WithMaxAttempts(10), retry.WithBackoff(0, 0), retry.WithMaxElapsed(2*time.Second))
		re := wantError(t, err, retry.ErrOutOfTime, 3, hinted{time.Second})
		if re.Wait != time.Second || re.Deadline || time.Since(start) != 2*time.Second {
			t.Fatalf("%#v after %v", re, time.Since(start))
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatal("a retry time limit matches DeadlineExceeded")
		}
		// ctx's deadline: a wait ending at it is not made.
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		s = &script{errs: []error{hinted{time.Second}, hinted{time.Second}, hinted{time.Second}}}
		start = time.Now()
		err = retry.Do(c, s.fn, retry.WithMaxAttempts(10), retry.WithBackoff(0, 0))
		re = wantError(t, err, retry.ErrOutOfTime, 2, hinted{time.Second})
		if !re.Deadline || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Fatalf("%#v after %v", re, time.Since(start))
		}
	})
}

// Unseeded full jitter stays in [0, min(max, base·2^(k-1))] and averages
// about half of it.
func TestUnseededJitterRange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const runs, attempts = 200, 6
		base, cp := 10*time.Millisecond, 80*time.Millisecond
		sums := make([]time.Duration, attempts-1)
		for range runs {
			s := zzFailing(attempts-1, errBoom)
			if err := retry.Do(ctx, s.fn, retry.WithMaxAttempts(attempts), retry.WithBackoff(base, cp)); err != nil {
				t.Fatal(err)
			}
			for k, g := range s.gaps() {
				ceil := min(cp, base<<k)
				if g < 0 || g > ceil {
					t.Fatalf("retry %d waited %v, want [0, %v]", k+1, g, ceil)
				}
				sums[k] += g
			}
		}
		for k, sum := range sums {
			mean, half := sum/runs, min(cp, base<<k)/2
			if mean < half*6/10 || mean > half*14/10 {
				t.Fatalf("retry %d: mean wait %v, want about %v", k+1, mean, half)
			}
		}
	})
}
