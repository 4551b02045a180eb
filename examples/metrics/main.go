// Command metrics is a limiter with its metrics served and drawn: for a
// few seconds, a client offers calm, then stormy, then calm traffic to the
// local demo API (internal/demoapi, on loopback) through an actor.Limiter,
// serves the limiter's series on /metrics with sluiceprom, scrapes them
// there itself as Prometheus would, and draws what a dashboard of them
// shows: admitted and denied per second, the waiters, the 99th percentile
// of the wait (docs/observability.md, "A dashboard").
//
//	go run .                                   # 6 s; the summary on stdout
//	go run . -chart ../../docs/img/metrics/dashboard.svg
//	go run . -listen 127.0.0.1:9464 -for 60s   # scrape it with a Prometheus meanwhile
//
// The limiter is GCRA(-rate per second, burst -burst) with WithMaxWait
// (-max-wait): an Acquire that would wait longer is denied at once with
// ErrRateLimited, the others wait their turn. The traffic is -calm arrivals
// per second for the first third of -for, -storm for the second, -calm
// again for the last. The API admits -rate plus -burst requests in any
// second, so a client that keeps to its limiter gets no 429.
//
// Each panel is a query of the scraped series, as PromQL would compute it
// over a one-second window (the doc lists them); the chart is an SVG file
// with no dependency beyond the standard library.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"
)

type config struct {
	length      time.Duration // the run: three phases of a third each
	rate, burst int64         // the limiter
	calm, storm int64         // arrivals per second offered
	maxWait     time.Duration
	scrape      time.Duration
	window      time.Duration // of the rates and the quantile
	latency     time.Duration // the API's mean
	listen      string
	chart       string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{window: time.Second, latency: 50 * time.Millisecond}
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&c.length, "for", 6*time.Second, "how long the traffic runs")
	fs.Int64Var(&c.rate, "rate", 20, "the limiter's rate, per second")
	fs.Int64Var(&c.burst, "burst", 5, "the limiter's burst")
	fs.Int64Var(&c.calm, "calm", 10, "arrivals per second in the calm thirds")
	fs.Int64Var(&c.storm, "storm", 60, "arrivals per second in the middle third")
	fs.DurationVar(&c.maxWait, "max-wait", 250*time.Millisecond, "the longest wait; an Acquire that would wait longer is denied")
	fs.DurationVar(&c.scrape, "scrape", 100*time.Millisecond, "the scrape interval")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:0", "the address /metrics is served on")
	fs.StringVar(&c.chart, "chart", "", "write the dashboard as SVG to `file`")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	return c, c.validate()
}

func (c config) validate() error {
	switch {
	case c.length <= 0 || c.maxWait <= 0 || c.scrape <= 0:
		return errors.New("-for, -max-wait and -scrape must be positive")
	case c.rate < 1 || c.burst < 1 || c.calm < 1 || c.storm < 1:
		return errors.New("-rate, -burst, -calm and -storm must be positive")
	case c.rate > 10_000 || c.calm > 10_000 || c.storm > 10_000:
		return errors.New("-rate, -calm and -storm are at most 10000 per second: this is a demo")
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(realMain(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// realMain runs the demo and returns the exit code: 0 when it ran (or -h
// asked for the usage), 1 when it failed, 2 for bad flags.
func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "metrics:", err)
		return 2
	}
	if err := serveAndRun(ctx, cfg, stdout); err != nil {
		fmt.Fprintln(stderr, "metrics:", err)
		return 1
	}
	return 0
}
