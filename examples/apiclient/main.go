// Command apiclient is sluice's main demo: a client that processes 500 jobs
// against a rate-limited API with 64 workers, and gets no 429.
//
//	go run ./examples/apiclient
//	go run ./examples/apiclient -rps 50 -tpm 2000000 -jobs 1000
//	go run ./examples/apiclient -margin -10     # a client 10% too fast: 429s
//
// It starts the API on loopback (httptest): requests per second over any
// 1 s window, tokens per minute in a continuously refilled bucket, and a cap
// on concurrent requests, each answered with 429 and Retry-After beyond it
// (server.go). The client derives its limiters from the same quota, less a
// small margin (-margin, percent) for the jitter between the moment a
// permit is granted and the moment the request reaches the API:
//
//	requests := GCRA(rps·(1-margin) per second, burst 1)
//	tokens   := GCRA(tpm·(1-margin) per minute, burst tpmBurst·(1-margin))
//	conns    := actor.NewPool(concurrency)
//	lim      := permits.All(permits.FixedCost(requests, 1), tokens, permits.FixedCost(conns, 1))
//
// Why these match the API's checks, and no more: a GCRA at rate r with
// burst b admits at most b + r·d units over any closed interval of length
// d, so with burst 1 at most rps requests fall in any half-open 1 s window,
// exactly the API's limit; and a GCRA is the dual of a token bucket, so
// GCRA(tpm, tpmBurst) admits exactly what the API's bucket does at the same
// instants. With -margin 0 the client is as fast as the API allows and no
// faster; the default 5% absorbs loopback jitter; a negative margin makes
// it too fast, and the API says so.
//
// A conc pool of -workers goroutines processes -jobs jobs of random token
// costs. Progress goes to stderr (one updated line on a terminal, plain
// lines otherwise), the summary to stdout.
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
)

type config struct {
	jobs, workers        int
	rps                  int   // API: requests in any 1 s
	tpm, tpmBurst        int64 // API: tokens per minute, bucket size
	concurrency          int   // API: requests served at once; client pool size
	minTokens, maxTokens int64
	latency              durationFlag
	margin               int64 // percent the client stays below the quota
	seed                 uint64
	progressEvery        durationFlag
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{latency: durationFlag(400 * time.Millisecond), progressEvery: durationFlag(200 * time.Millisecond)}
	fs := flag.NewFlagSet("apiclient", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.jobs, "jobs", 500, "jobs to process")
	fs.IntVar(&cfg.workers, "workers", 64, "goroutines in the conc pool")
	fs.IntVar(&cfg.rps, "rps", 30, "API quota: requests in any 1 s")
	fs.Int64Var(&cfg.tpm, "tpm", 1_200_000, "API quota: tokens per minute, refilled continuously")
	fs.Int64Var(&cfg.tpmBurst, "tpm-burst", 60_000, "API quota: tokens the bucket holds")
	fs.IntVar(&cfg.concurrency, "concurrency", 20, "API quota: requests served at once (the client's pool size)")
	fs.Int64Var(&cfg.minTokens, "min-tokens", 100, "smallest job, in tokens")
	fs.Int64Var(&cfg.maxTokens, "max-tokens", 1900, "largest job, in tokens")
	fs.Var(&cfg.latency, "latency", "mean time the API takes per request (each takes 0.5x to 1.5x)")
	fs.Int64Var(&cfg.margin, "margin", 5, "percent the client's limits stay below the quota (negative: above)")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed for job costs and latencies")
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
	case c.rps < 1 || c.tpm < 1 || c.concurrency < 1:
		return errors.New("-rps, -tpm and -concurrency must be positive")
	case c.tpmBurst < 1 || c.tpmBurst > 100_000_000:
		return errors.New("-tpm-burst must be in [1, 1e8]")
	case c.minTokens < 1 || c.maxTokens < c.minTokens:
		return errors.New("want 1 <= -min-tokens <= -max-tokens")
	case c.margin >= 100 || c.margin <= -100:
		return errors.New("-margin is a percentage in (-100, 100)")
	case c.latency <= 0 || c.progressEvery <= 0:
		return errors.New("-latency and -progress must be positive")
	}
	if b := c.clientBurst(); c.maxTokens > b {
		return fmt.Errorf("-max-tokens %d exceeds the client's token burst %d (-tpm-burst less the margin)", c.maxTokens, b)
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
	api := newAPI(cfg)
	srv := httptest.NewServer(api)
	defer srv.Close()
	transport := &http.Transport{MaxIdleConnsPerHost: cfg.concurrency}
	defer transport.CloseIdleConnections()

	res, err := run(ctx, cfg, api, &http.Client{Transport: transport}, srv.URL, newProgress(stderr, terminal))
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
