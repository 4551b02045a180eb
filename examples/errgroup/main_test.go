package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// defaults returns the configuration of the flags' defaults.
func defaults(t *testing.T) config {
	t.Helper()
	cfg, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// runVirtual runs once in a synctest bubble, where time is virtual and the
// timings are exact.
func runVirtual(t *testing.T, cfg config, fail int) result {
	t.Helper()
	var res result
	synctest.Test(t, func(t *testing.T) {
		var err error
		res, err = run(context.Background(), cfg, fail)
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%+v", res)
	return res
}

// TestEveryJobAtTheRate: with no failure, every job runs, never more than
// the pool at a time, and no faster than the rate: the last of 1000 grants
// at 2000/s after a burst of 10 comes at 495ms, and its call takes 100µs.
func TestEveryJobAtTheRate(t *testing.T) {
	cfg := defaults(t)
	res := runVirtual(t, cfg, noFailure)
	if res.err != nil {
		t.Errorf("error %v, want none", res.err)
	}
	if res.started != int64(cfg.jobs) {
		t.Errorf("%d calls started, want %d", res.started, cfg.jobs)
	}
	if res.peak > cfg.conns {
		t.Errorf("%d calls in flight at once, want at most %d", res.peak, cfg.conns)
	}
	if want := 495*time.Millisecond + cfg.work; res.elapsed != want {
		t.Errorf("took %v, want %v", res.elapsed, want)
	}
	if res.canceled != 0 || res.held != 0 {
		t.Errorf("%d waiters cancelled and %d permits held, want none", res.canceled, res.held)
	}
}

// TestFailureCancelsTheWaiters: once job 40 fails, the group stops early,
// the workers waiting for a permit return at once, and no permit is held.
// After the burst of 10 at 0ms, the rate grants one call every 500µs: job
// 40's at 15.5ms, when job 39's call (100µs) has long returned.
func TestFailureCancelsTheWaiters(t *testing.T) {
	cfg := defaults(t)
	res := runVirtual(t, cfg, 40)
	if res.err == nil || res.err.Error() != "job 40: bad input" {
		t.Errorf("error %v, want job 40: bad input", res.err)
	}
	if res.started != 41 {
		t.Errorf("%d calls started, want 41: jobs 0 to 40, and none after", res.started)
	}
	if res.elapsed != 15500*time.Microsecond {
		t.Errorf("took %v, want 15.5ms: the group ends with job 40's grant", res.elapsed)
	}
	if res.canceled == 0 {
		t.Error("no waiter was cancelled; want the workers queued for a permit to return with the group's context")
	}
	if res.held != 0 {
		t.Errorf("%d permits held afterwards, want 0", res.held)
	}
}

// TestSetLimitWaitIgnoresTheContext pins what the package comment says of
// errgroup: with SetLimit, g.Go waits for a free goroutine without a
// context, so a feeder stays blocked after the group's context has ended,
// until a running function returns of its own accord.
func TestSetLimitWaitIgnoresTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		g, ctx := errgroup.WithContext(parent)
		g.SetLimit(1)
		release := make(chan struct{})
		g.Go(func() error { <-release; return nil }) // holds the only slot

		fed := make(chan struct{})
		go func() {
			defer close(fed)
			g.Go(func() error { return nil }) // the feeder's next job
		}()
		cancel()
		synctest.Wait()
		if ctx.Err() == nil {
			t.Fatal("the group's context has not ended")
		}
		select {
		case <-fed:
			t.Fatal("g.Go returned when the context ended; want it to wait for the slot")
		default:
		}
		close(release)
		<-fed
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRealMain(t *testing.T) {
	var out, errs bytes.Buffer
	if code := realMain(context.Background(), []string{"-jobs", "100", "-rps", "10000", "-fail", "20"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errs.String(), out.String())
	}
	for _, want := range []string{"no job fails\n", "job 20 fails\n", "calls started     100 of 100\n", "error             job 20: bad input\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-jobs", "0"}, {"-rps", "0"}, {"-conns", "0"}, {"-fail", "1000"}, {"-work", "-1s"}, {"-nope"}} {
		var errs bytes.Buffer
		if code := realMain(context.Background(), args, io.Discard, &errs); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		if errs.Len() == 0 {
			t.Errorf("%v: nothing on stderr", args)
		}
	}
}
