package sim_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
)

func retry(t *testing.T, s string) sim.Retry {
	t.Helper()
	r, err := sim.ParseRetry(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// storm is a hundred callers at one instant against ten a second, callers
// that never wait and retry three times.
func storm(t *testing.T, policy string, seed uint64) *sim.Result {
	a := arrivals(t, 10*time.Second, 1, "spike:100@0s")
	return run(t, a, sim.Config{Limit: limit(t, "fixed:10/s"), MaxWait: 0, Retry: retry(t, policy), Seed: seed, Window: 10 * time.Millisecond})
}

// TestRetryAfterWithoutJitterIsAStorm: every refused caller is told to
// come back when the window turns, and without jitter all of them do, at
// that one instant: 90 retries at 1s, 80 at 2s, 70 at 3s; 340 attempts for
// 100 requests.
func TestRetryAfterWithoutJitterIsAStorm(t *testing.T) {
	res := storm(t, "max=3,after=retry-after,jitter=none", 1)
	if res.PeakRetries != 90 || res.PeakRetriesAt != time.Second {
		t.Errorf("peak %d retries at %v, want 90 at 1s", res.PeakRetries, res.PeakRetriesAt)
	}
	if res.Retries != 90+80+70 || res.Admitted != 40 || res.Refused != 60 || res.Offered != 100 {
		t.Errorf("retries %d admitted %d refused %d offered %d; want 240, 40, 60, 100", res.Retries, res.Admitted, res.Refused, res.Offered)
	}
	// A retried request's wait counts from its first attempt.
	if res.Max != 3*time.Second {
		t.Errorf("longest wait %v, want 3s (the last admitted came in at its third retry)", res.Max)
	}
}

// TestJitterPreventsTheStorm: with full or equal jitter the same callers
// come back spread over the second after the instant named, never before
// it, at most two at any one instant, and the window's admissions spread
// with them.
func TestJitterPreventsTheStorm(t *testing.T) {
	calm := storm(t, "max=3,after=retry-after,jitter=none", 1)
	for _, j := range []string{"full", "equal"} {
		res := storm(t, "max=3,after=retry-after,jitter="+j, 1)
		if res.PeakRetries > 2 {
			t.Errorf("jitter=%s: %d retries at one instant (%v), want at most 2", j, res.PeakRetries, res.PeakRetriesAt)
		}
		if n, c := mostAtOneInstant(res.Grants[10:]), mostAtOneInstant(calm.Grants[10:]); n > 2 || c != 10 {
			t.Errorf("jitter=%s: %d retries granted at one instant, without jitter %d; want at most 2 and 10", j, n, c)
		}
		for _, g := range res.Grants[10:] {
			if g.At < time.Second {
				t.Fatalf("jitter=%s: a retry granted at %v, before the instant named (1s)", j, g.At)
			}
		}
	}
}

func mostAtOneInstant(g []sim.Grant) int {
	most, run := 0, 0
	for i := range g {
		if i == 0 || g[i].At != g[i-1].At {
			run = 0
		}
		run++
		most = max(most, run)
	}
	return most
}

// TestExponentialBackoff: after=exp waits base·2^(k-1) up to the cap,
// whatever the RetryAfter says: without jitter the 90 refused retry at
// 100ms, then 300ms, then 700ms, all inside the first window, so every
// retry is refused.
func TestExponentialBackoff(t *testing.T) {
	res := storm(t, "max=3,after=exp,base=100ms,cap=10s,jitter=none", 1)
	if res.PeakRetries != 90 || res.PeakRetriesAt != 100*time.Millisecond || res.Retries != 270 || res.Admitted != 10 {
		t.Errorf("peak %d at %v, retries %d, admitted %d; want 90 at 100ms, 270, 10", res.PeakRetries, res.PeakRetriesAt, res.Retries, res.Admitted)
	}
	capped := storm(t, "max=3,after=exp,base=800ms,cap=1s,jitter=none", 1)
	// 0.8s, then 0.8+1s, then 2.8s: the second and third land in later windows.
	if capped.Admitted != 30 || capped.PeakRetriesAt != 800*time.Millisecond {
		t.Errorf("capped: admitted %d, peak at %v; want 30, 800ms", capped.Admitted, capped.PeakRetriesAt)
	}
}

// TestRetriesAreDeterministicForASeed: the jitter comes from the seed.
func TestRetriesAreDeterministicForASeed(t *testing.T) {
	a, b, c := storm(t, "jitter=full", 1), storm(t, "jitter=full", 1), storm(t, "jitter=full", 2)
	if a.MaxInWindowAt != b.MaxInWindowAt || a.Retries != b.Retries || len(a.Grants) != len(b.Grants) {
		t.Fatal("the same seed, another run")
	}
	same := len(a.Grants) == len(c.Grants)
	for i := 0; same && i < len(a.Grants); i++ {
		same = a.Grants[i] == c.Grants[i]
	}
	if same {
		t.Error("two seeds, the same jitter")
	}
}

// TestRetryAfterBehindWaiters: a caller refused because the waiters ahead
// would keep it beyond its maximum wait is told the instant the algorithm
// names after them, and retries then.
func TestRetryAfterBehindWaiters(t *testing.T) {
	a := arrivals(t, 10*time.Second, 1, "spike:5@0s")
	res := run(t, a, sim.Config{Limit: limit(t, "gcra:1/s,burst=1"), MaxWait: 1500 * time.Millisecond, Retry: retry(t, "max=1,jitter=none")})
	// Granted at 0 and 1s; the third is refused (2s > 1.5s), told 2s, and
	// its retry at 2s passes; the fourth and fifth, told 2s too, then
	// wait behind it.
	var at []time.Duration
	for _, g := range res.Grants {
		at = append(at, g.At)
	}
	if res.Retries != 3 || res.PeakRetriesAt != 2*time.Second || len(at) < 3 || at[2] != 2*time.Second {
		t.Errorf("retries %d peak at %v, grants %v; want 3 retries at 2s, the third granted at 2s", res.Retries, res.PeakRetriesAt, at)
	}
}

func TestParseRetry(t *testing.T) {
	for in, want := range map[string]string{
		"max=3,after=retry-after,jitter=full": "max=3,after=retry-after,jitter=full",
		"jitter=none":                         "max=3,after=retry-after,jitter=none",
		"after=exp,base=100ms,cap=10s":        "max=3,after=exp,base=100ms,cap=10s,jitter=full",
		" MAX = 5 , after=EXP , jitter=equal": "max=5,after=exp,base=100ms,cap=10s,jitter=equal",
	} {
		r, err := sim.ParseRetry(in)
		if err != nil || r.String() != want {
			t.Errorf("ParseRetry(%q) = %v, %v; want %s", in, r, err, want)
			continue
		}
		if back, err := sim.ParseRetry(r.String()); err != nil || back != r {
			t.Errorf("%q does not read back: %v, %v", r.String(), back, err)
		}
	}
	for in, says := range map[string]string{
		"3":                        "is not NAME=VALUE",
		"max=-1":                   "not a whole number from 0 to 100",
		"max=1,max=2":              "max= is given twice",
		"after=soon":               "want retry-after",
		"jitter=some":              "want none, full or equal",
		"base=0s":                  "not a positive duration",
		"after=exp,base=1m,cap=1s": "base=1m is above cap=1s",
		"tries=3":                  `unknown option "tries"`,
	} {
		_, err := sim.ParseRetry(in)
		if !errors.Is(err, sim.ErrInvalidRetry) || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseRetry(%q) = %v, want an error saying %q", in, err, says)
		}
	}
}
