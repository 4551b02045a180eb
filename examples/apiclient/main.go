// Command apiclient is sluice's main demo: a client that processes 500 jobs
// against a rate-limited LLM-style API with 64 workers, uses its token
// quota to the full, gets no 429 for exceeding it, and rides out an
// overload.
//
//	go run ./examples/apiclient
//	go run ./examples/apiclient -tpm 2000000 -jobs 1000
//	go run ./examples/apiclient -settle=false    # estimates never settled: the quota three quarters used
//	go run ./examples/apiclient -margin -10      # a client 10% too fast: 429s for the quota
//
// It starts the API on loopback (httptest, internal/demoapi): requests in any 1 s,
// tokens in any token window (-token-window, 2 s: -tpm's share of it),
// charged on arrival at the request's prompt + max_tokens and adjusted to
// the real usage when it answers, and a cap on requests at once; beyond
// any of them it answers 429 with Retry-After. For a few seconds in the
// middle of the run (-overload-at, -overload-for) it is overloaded and
// answers everything 429 with Retry-After: 1.
//
// The client (client.go) is an httplimit.Transport over
//
//	requests := GCRA(rps·(1-margin) per second, burst 1)
//	tokens   := SlidingWindow(the API's token quota per window·1/(1-margin))
//	conns    := actor.NewPool(concurrency)
//	lim      := permits.All(permits.FixedCost(requests, 1), tokens, permits.FixedCost(conns, 1))
//
// Each job acquires its estimate (prompt + max_tokens) and the Transport
// settles it with the usage the API returns (X-Usage-Tokens), so that the
// client's window counts what the API's counts. A GCRA at rate r with
// burst 1 spaces requests 1/r apart, so at most rps fall in any 1 s at
// rps·(1-margin); a sliding window longer than the API's by more than the
// delay between a grant and its arrival never lets the API's window hold
// more than its limit. The margin (-margin, percent, default 1) is that
// slack. On each 429 the Transport pauses the whole limiter until the
// Retry-After and retries the job after it.
//
// A conc pool of -workers goroutines processes -jobs jobs. Progress goes to
// stderr (one updated line on a terminal, plain lines otherwise), the
// summary to stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"time"

	"github.com/sluicehq/sluice/internal/demoapi"
)

type config struct {
	jobs, workers        int
	rps                  int   // API: requests in any 1 s
	tpm                  int64 // API: tokens per minute, enforced per token window
	tokenWindow          durationFlag
	concurrency          int // API: requests served at once; client pool size
	minTokens, maxTokens int64
	latency              durationFlag
	margin               int64 // percent the client stays below the quota
	overloadAt           durationFlag
	overloadFor          durationFlag
	overloadRetry        durationFlag
	settle               bool
	seed                 uint64
	progressEvery        durationFlag
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{
		tokenWindow: durationFlag(2 * time.Second), latency: durationFlag(100 * time.Millisecond),
		overloadAt: durationFlag(8 * time.Second), overloadFor: durationFlag(3 * time.Second), overloadRetry: durationFlag(time.Second),
		progressEvery: durationFlag(200 * time.Millisecond),
	}
	fs := flag.NewFlagSet("apiclient", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.jobs, "jobs", 500, "jobs to process")
	fs.IntVar(&cfg.workers, "workers", 64, "goroutines in the conc pool")
	fs.IntVar(&cfg.rps, "rps", 50, "API quota: requests in any 1 s")
	fs.Int64Var(&cfg.tpm, "tpm", 1_200_000, "API quota: tokens per minute, enforced as their share of any token window")
	fs.Var(&cfg.tokenWindow, "token-window", "API quota: the window the token quota is enforced over")
	fs.IntVar(&cfg.concurrency, "concurrency", 20, "API quota: requests served at once (the client's pool size)")
	fs.Int64Var(&cfg.minTokens, "min-tokens", 100, "smallest job's estimate (prompt + max_tokens), in tokens")
	fs.Int64Var(&cfg.maxTokens, "max-tokens", 1900, "largest job's estimate, in tokens")
	fs.Var(&cfg.latency, "latency", "mean time the API takes per request (each takes 0.5x to 1.5x)")
	fs.Int64Var(&cfg.margin, "margin", 1, "percent the client's limits stay below the quota (negative: above)")
	fs.Var(&cfg.overloadAt, "overload-at", "when the API's overload starts, after its first request")
	fs.Var(&cfg.overloadFor, "overload-for", "how long it lasts (0: none)")
	fs.Var(&cfg.overloadRetry, "overload-retry-after", "the Retry-After of an overloaded answer")
	fs.BoolVar(&cfg.settle, "settle", true, "settle each estimate with the usage the API returns")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed for job costs, usage and latencies")
	fs.Var(&cfg.progressEvery, "progress", "progress update interval")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	return cfg, cfg.validate()
}

func (c config) validate() error {
	switch {
	case c.jobs < 1 || c.workers < 1:
		return errors.New("-jobs and -workers must be positive")
	case c.rps < 1 || c.concurrency < 1:
		return errors.New("-rps and -concurrency must be positive")
	case c.tpm < 1 || c.tpm > 1e12:
		return errors.New("-tpm must be in [1, 1e12]")
	case c.tokenWindow < durationFlag(time.Millisecond) || c.tokenWindow > durationFlag(time.Minute):
		return errors.New("-token-window must be in [1ms, 1m]")
	case c.minTokens < 1 || c.maxTokens < c.minTokens:
		return errors.New("want 1 <= -min-tokens <= -max-tokens")
	case c.margin >= 100 || c.margin <= -100:
		return errors.New("-margin is a percentage in (-100, 100)")
	case c.latency <= 0 || c.progressEvery <= 0:
		return errors.New("-latency and -progress must be positive")
	case c.overloadAt < 0 || c.overloadFor < 0 || c.overloadRetry < durationFlag(time.Second):
		return errors.New("-overload-at and -overload-for must not be negative, -overload-retry-after at least 1s")
	}
	if l := c.tokenLimit(); c.maxTokens > l {
		return fmt.Errorf("-max-tokens %d exceeds the API's token quota per window, %d", c.maxTokens, l)
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(realMain(ctx, os.Args[1:], os.Stdout, os.Stderr, isTerminal(os.Stderr)))
}

// realMain runs the demo against an API on loopback and returns the exit
// code: 0 when every job was done (or -h asked for the usage), 1 when some
// were not, 2 for bad flags.
func realMain(ctx context.Context, args []string, stdout, stderr io.Writer, terminal bool) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0 // -h: the usage was asked for, and printed
	}
	if err != nil {
		fmt.Fprintln(stderr, "apiclient:", err)
		return 2
	}
	api := demoapi.New(cfg.apiConfig())
	srv := httptest.NewServer(api)
	defer srv.Close()
	transport := &http.Transport{MaxIdleConnsPerHost: cfg.concurrency}
	defer transport.CloseIdleConnections()

	res, err := run(ctx, cfg, api, transport, srv.URL, newProgress(stderr, terminal))
	if err != nil {
		fmt.Fprintln(stderr, "apiclient:", err)
		return 1
	}
	res.print(stdout, cfg)
	if res.failed > 0 {
		return 1
	}
	return 0
}

// isTerminal reports whether f is a character device: a terminal, where
// progress can redraw one line.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// durationFlag is a time.Duration flag that keeps config comparable and
// printable.
type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }

func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	*d = durationFlag(v)
	return err
}
