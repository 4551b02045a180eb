// Command errgroup is a worker loop of golang.org/x/sync/errgroup limited by
// sluice: a few workers take jobs from a channel, and each call they make
// first acquires a permit, with the group's context, from a request rate
// (a GCRA in an actor.Limiter) and a pool of connections (an actor.Pool)
// combined by permits.All.
//
//	go run -C examples/errgroup .
//	go run -C examples/errgroup . -rps 500 -conns 2 -fail 100
//
// This directory is a module of its own, so that golang.org/x/sync never
// enters sluice's go.mod; `go run ./examples/errgroup` from the root of the
// repository does not reach it, hence -C.
//
// Why a permit rather than errgroup's g.SetLimit(n). SetLimit makes g.Go
// block, in Go and without a context, until a goroutine is free: that wait
// cannot be cancelled, so the loop feeding the group keeps waiting for slots
// after the group has already failed; every goroutine counts as one, with no
// weights; and it bounds concurrency only, never a rate. A permit is acquired
// with the group's context: the first job to fail cancels it, and every
// worker still waiting for capacity returns at once, giving back what it
// took. The same limiter can be weighted (a cost per call), shared with code
// outside the group, and made of a rate and a pool together.
//
// The program makes two runs of -jobs jobs with -workers workers. In the
// first, no job fails: every job runs, at the rate and never more than
// -conns at a time. In the second, job -fail fails: the group stops early,
// the workers waiting for a permit are cancelled, and no permit is held
// afterwards.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// burst is how many calls the rate lets through at once after a quiet spell.
const burst = 10

// noFailure is the value of config.fail for a run in which every job succeeds.
const noFailure = -1

type config struct {
	jobs, workers int
	rps, conns    int64
	fail          int           // the job that fails, or noFailure
	work          time.Duration // how long each call takes
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("errgroup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.jobs, "jobs", 1000, "jobs to process")
	fs.IntVar(&cfg.workers, "workers", 16, "goroutines of the errgroup taking jobs")
	fs.Int64Var(&cfg.rps, "rps", 2000, "calls per second (a GCRA with a burst of 10)")
	fs.Int64Var(&cfg.conns, "conns", 4, "calls at a time (an actor.Pool)")
	fs.IntVar(&cfg.fail, "fail", 40, "the job that fails in the second run")
	fs.DurationVar(&cfg.work, "work", 100*time.Microsecond, "how long each call takes")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	return cfg, cfg.validate()
}

func (c config) validate() error {
	switch {
	case c.jobs < 1 || c.workers < 1:
		return errors.New("-jobs and -workers must be positive")
	case c.rps < 1 || c.conns < 1:
		return errors.New("-rps and -conns must be positive")
	case c.fail < 0 || c.fail >= c.jobs:
		return fmt.Errorf("-fail must be a job in [0, %d)", c.jobs)
	case c.work < 0:
		return errors.New("-work must not be negative")
	}
	return nil
}

// result is what one run observed.
type result struct {
	err      error         // what g.Wait returned
	started  int64         // calls that began (each holds a permit)
	peak     int64         // most calls in flight at once
	canceled uint64        // acquires that returned because the group's context ended
	held     int64         // connections still held once g.Wait returned
	elapsed  time.Duration // from the first job to g.Wait's return
}

// run processes cfg.jobs jobs with cfg.workers workers in an errgroup; job
// fail fails (noFailure: none does). It fails only if the limiters cannot be
// built.
func run(ctx context.Context, cfg config, fail int) (result, error) {
	gcra, err := algorithms.NewGCRA(algorithms.PerSecond(cfg.rps), burst)
	if err != nil {
		return result{}, err
	}
	rate := actor.MustNew(gcra)
	defer rate.Close()
	conns, err := actor.NewPool(cfg.conns)
	if err != nil {
		return result{}, err
	}
	defer conns.Close()
	lim := permits.All(rate, conns) // cfg.rps calls/s, cfg.conns at a time

	var started, inFlight, peak atomic.Int64
	call := func(ctx context.Context, job int) error {
		started.Add(1)
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
		}
		if job == fail {
			return fmt.Errorf("job %d: bad input", job)
		}
		select { // the call, which honours its context
		case <-time.After(cfg.work):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	start := time.Now()
	var canceled atomic.Uint64
	err = process(ctx, lim, cfg.jobs, cfg.workers, call, &canceled)
	return result{
		err:      err,
		elapsed:  time.Since(start),
		started:  started.Load(),
		peak:     peak.Load(),
		held:     conns.Stats().InFlight,
		canceled: canceled.Load(),
	}, nil
}

// process is the worker loop: a feeder sends jobs 0 to jobs-1, and each of
// workers workers runs call on the jobs it takes, under a permit of lim
// acquired with the group's context. It returns the first error, and
// counts in canceled the acquisitions that gave up because the group's
// context ended.
//
// When a call fails, the group's context is cancelled: the feeder stops at
// once (it selects on ctx.Done), and so does every worker waiting in
// lim.Acquire, which gives back whatever part of the permit it held. With
// g.SetLimit instead of lim, the feeder would sit in g.Go, which takes no
// context, until a running call returned.
func process(ctx context.Context, lim permits.Limiter, jobs, workers int, call func(context.Context, int) error, canceled *atomic.Uint64) error {
	g, ctx := errgroup.WithContext(ctx)
	queue := make(chan int)
	g.Go(func() error {
		defer close(queue)
		for j := range jobs {
			select {
			case queue <- j:
			case <-ctx.Done():
				return nil // stop feeding: the group failed
			}
		}
		return nil
	})
	for range workers {
		g.Go(func() error {
			for j := range queue {
				ran := false
				err := permits.Do(ctx, lim, 1, func(ctx context.Context) error {
					ran = true
					return call(ctx, j)
				})
				if err != nil {
					if !ran && ctx.Err() != nil {
						canceled.Add(1) // gave up waiting for a permit
					}
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// allowed is the most calls a GCRA at rps per second with burst burst
// admits over r.elapsed: burst + rps·elapsed.
func (r result) allowed(rps int64) int64 {
	return burst + int64(float64(rps)*r.elapsed.Seconds())
}

func (r result) print(w io.Writer, title string, cfg config) {
	fmt.Fprintln(w, title)
	fmt.Fprintf(w, "  calls started     %d of %d\n", r.started, cfg.jobs)
	fmt.Fprintf(w, "  most in flight    %d (pool of %d)\n", r.peak, cfg.conns)
	fmt.Fprintf(w, "  took              %v (the rate allows %d + %d/s × that = %d calls)\n",
		r.elapsed.Round(time.Millisecond), burst, cfg.rps, r.allowed(cfg.rps))
	fmt.Fprintf(w, "  waiters cancelled %d\n", r.canceled)
	fmt.Fprintf(w, "  permits held      %d\n", r.held)
	fmt.Fprintf(w, "  error             %v\n", r.err)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(realMain(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// realMain makes both runs and returns the exit code: 0 when they behaved
// as the package comment says, 1 otherwise, 2 for bad flags.
func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "errgroup:", err)
		}
		return 2
	}
	fmt.Fprintf(stdout, "%d jobs, %d workers in an errgroup; each call takes a permit from %d calls/s and a pool of %d, with the group's context\n\n",
		cfg.jobs, cfg.workers, cfg.rps, cfg.conns)

	ok := true
	for _, fail := range []int{noFailure, cfg.fail} {
		res, err := run(ctx, cfg, fail)
		if err != nil {
			fmt.Fprintln(stderr, "errgroup:", err)
			return 1
		}
		title := "no job fails"
		if fail != noFailure {
			title = fmt.Sprintf("job %d fails", fail)
		}
		res.print(stdout, title, cfg)
		fmt.Fprintln(stdout)
		if fail == noFailure {
			ok = ok && res.err == nil && res.started == int64(cfg.jobs)
		} else {
			ok = ok && res.err != nil
		}
		ok = ok && res.peak <= cfg.conns && res.started <= res.allowed(cfg.rps) && res.held == 0
	}
	if !ok {
		return 1
	}
	return 0
}
