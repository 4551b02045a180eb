package retry_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/retry"
)

// timingCase is one random configuration of the property test.
type timingCase struct {
	maxAttempts int
	base, cap   time.Duration
	maxElapsed  time.Duration // 0: none
	deadline    time.Duration // 0: none
	percent     float64       // the budget's share of one deposit: floor(percent) retries
}

// ceiling is the reference back-off ceiling before retry k.
func (c timingCase) ceiling(k int) time.Duration {
	d := c.base
	for range k - 1 {
		d = min(2*d, c.cap)
	}
	return min(d, c.cap)
}

// attemptRecord is what fn saw of one attempt.
type attemptRecord struct {
	start, end time.Time
	err        error
	hint       time.Duration
}

// TestTimingProperty runs Do with random settings against an fn that takes
// random times and fails in random ways (plain errors, errors with a hint,
// permanent ones), and checks every wait and the final answer against the
// rules: never earlier than the error asked, never longer than the back-off
// allows beyond that, no attempt past the retry time limit or the deadline,
// at most the attempts and the retries the budget allows, and Do's error
// saying truly why it stopped.
func TestTimingProperty(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (rand.NewPCG(seed, 1))", seed)
		}
	})
	reasons := map[string]int{}
	for run := range 400 {
		c := timingCase{
			maxAttempts: 1 + rng.IntN(8),
			base:        time.Duration(rng.Int64N(int64(time.Second))),
			percent:     []float64{0, 1, 2.5, 100}[rng.IntN(4)],
		}
		c.cap = c.base + time.Duration(rng.Int64N(int64(4*time.Second)))
		if rng.IntN(2) == 0 {
			c.maxElapsed = time.Duration(1 + rng.Int64N(int64(20*time.Second)))
		}
		if rng.IntN(2) == 0 {
			c.deadline = time.Duration(1 + rng.Int64N(int64(30*time.Second)))
		}
		synctest.Test(t, func(t *testing.T) {
			reasons[checkTiming(t, run, c, rng.Uint64())]++
		})
		if t.Failed() {
			return
		}
	}
	t.Logf("how the runs ended: %v", reasons)
	for _, r := range []string{"success", "permanent", "exhausted", "budget", "out of time", "deadline"} {
		if reasons[r] == 0 {
			t.Errorf("no run ended with %s: the property test misses a case", r)
		}
	}
}

// checkTiming runs one case in the current synctest bubble and returns how
// it ended.
func checkTiming(t *testing.T, run int, c timingCase, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 2))
	b, err := budget.New(budget.WithTTL(budget.MaxTTL), budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(c.percent))
	if err != nil {
		t.Fatal(err)
	}
	dctx := context.Background()
	if c.deadline > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(dctx, c.deadline)
		defer cancel()
	}
	start := time.Now()
	var recs []attemptRecord
	fn := func(context.Context) error {
		r := attemptRecord{start: time.Now()}
		time.Sleep(time.Duration(rng.Int64N(int64(2 * time.Second))))
		switch x := rng.IntN(20); {
		case x < 3:
			r.err = nil
		case x < 4:
			r.err = retry.MarkPermanent(errBoom)
		case x < 12:
			r.err = errBoom
		default:
			r.hint = time.Duration(rng.Int64N(int64(5 * time.Second)))
			r.err = hinted{r.hint}
		}
		r.end = time.Now()
		recs = append(recs, r)
		return r.err
	}
	err = retry.Do(dctx, fn, retry.WithMaxAttempts(c.maxAttempts), retry.WithBackoff(c.base, c.cap),
		retry.WithMaxElapsed(c.maxElapsed), retry.WithBudget(b), retry.WithJitterSeed(seed))
	returned := time.Now()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("run %d (%+v): "+format, append([]any{run, c}, args...)...)
	}
	deadline := start.Add(c.deadline)
	limitAt := func() time.Time { return recs[0].end.Add(c.maxElapsed) }

	if len(recs) == 0 || len(recs) > c.maxAttempts {
		fail("%d attempts", len(recs))
	}
	for i := 1; i < len(recs); i++ {
		gap, hint, ceil := recs[i].start.Sub(recs[i-1].end), recs[i-1].hint, c.ceiling(i)
		if gap < hint {
			fail("retry %d after %v, earlier than the %v asked", i, gap, hint)
		}
		if gap > max(hint, ceil) {
			fail("retry %d after %v, longer than max(hint %v, ceiling %v)", i, gap, hint, ceil)
		}
		if c.maxElapsed > 0 && recs[i].start.After(limitAt()) {
			fail("retry %d at %v, past the limit at %v", i, recs[i].start.Sub(start), limitAt().Sub(start))
		}
		if c.deadline > 0 && !recs[i].start.Before(deadline) {
			fail("retry %d at %v, at or past the deadline %v", i, recs[i].start.Sub(start), c.deadline)
		}
	}
	retries := len(recs) - 1
	if st := b.Stats(); st.Deposits != 1 || st.Withdrawals != int64(retries) {
		fail("budget %+v after %d retries", st, retries)
	}
	if retries > int(c.percent) {
		fail("%d retries on a budget allowing %d", retries, int(c.percent))
	}
	last := recs[len(recs)-1]
	if !returned.Equal(last.end) {
		fail("returned %v after the last attempt ended: Do may wait only before an attempt", returned.Sub(last.end))
	}
	var re *retry.Error
	switch {
	case last.err == nil:
		if err != nil {
			fail("the last attempt succeeded, Do returned %v", err)
		}
		return "success"
	case errors.Is(last.err, errBoom) && retry.DefaultClassifier(last.err) == retry.Permanent:
		if err != last.err {
			fail("a permanent error came back as %v", err)
		}
		return "permanent"
	case !errors.As(err, &re):
		fail("Do returned %v, want a *retry.Error", err)
	case re.Attempts != len(recs) || re.Last != last.err:
		fail("error %#v after %d attempts ending in %v", re, len(recs), last.err)
	}
	ended := "?"
	switch re.Reason {
	case context.DeadlineExceeded: // the deadline passed during the last attempt
		if c.deadline == 0 || last.end.Before(deadline) {
			fail("Reason DeadlineExceeded at %v (deadline %v)", last.end.Sub(start), c.deadline)
		}
		ended = "deadline"
	case retry.ErrAttemptsExhausted:
		if len(recs) != c.maxAttempts {
			fail("attempts exhausted after %d of %d", len(recs), c.maxAttempts)
		}
		ended = "exhausted"
	case retry.ErrOutOfTime:
		resume := last.end.Add(re.Wait)
		if re.Wait < last.hint || re.Wait > max(last.hint, c.ceiling(len(recs))) {
			fail("out of time for a wait of %v (hint %v, ceiling %v)", re.Wait, last.hint, c.ceiling(len(recs)))
		}
		if re.Deadline {
			if c.deadline == 0 || resume.Before(deadline) || !errors.Is(err, context.DeadlineExceeded) {
				fail("out of time by the deadline, but the wait ends at %v (deadline %v)", resume.Sub(start), c.deadline)
			}
		} else if c.maxElapsed == 0 || !resume.After(limitAt()) {
			fail("out of time by the limit, but the wait ends at %v (limit %v)", resume.Sub(start), limitAt().Sub(start))
		}
		ended = "out of time"
	case retry.ErrBudgetExhausted:
		if retries != int(c.percent) {
			fail("the budget refused after %d retries of %d", retries, int(c.percent))
		}
		ended = "budget"
	default:
		fail("Reason %v", re.Reason)
	}
	if re.Reason != context.DeadlineExceeded && c.deadline > 0 && !last.end.Before(deadline) {
		fail("ctx was done after the last attempt, but Do said %v", re.Reason)
	}
	return ended
}
