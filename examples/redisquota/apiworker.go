package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/redis/go-redis/v9"
	"github.com/sourcegraph/conc/pool"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/demoapi"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/retry"
)

// workerSpec is what the parent hands a client process on stdin.
type workerSpec struct {
	URL, Addr, Prefix string
	Requests, Tokens  algorithms.Rate // the shared limits in Redis: a GCRA, a sliding window
	RequestBurst      int64
	Pool              int // this process's share of the API's concurrency
	Workers           int // goroutines
	Jobs              []*demoapi.Job
}

// workerResult is what a client process writes to stdout when done.
type workerResult struct {
	Jobs      []*demoapi.Job
	Transport httplimit.TransportStats
}

// maxAttempts bounds the attempts of a job, as in apiclient.
const maxAttempts = 10

// apiWork is one client process: its jobs through an httplimit.Transport
// over
//
//	requests := redislimit.New: a GCRA, shared
//	tokens   := redislimit.NewWindow: a sliding window, shared, that settles and pauses
//	conns    := actor.NewPool(this process's share of the concurrency)
//	lim      := permits.All(tokens, FixedCost(requests, 1), FixedCost(conns, 1))
//
// Each job acquires its estimate, and the Transport settles the permit
// with the usage the API reports: the shared window then counts what the
// job really used, for every process, as the API's own window does. A 429
// with Retry-After pauses the shared window, in Redis, and so every
// process at once.
func apiWork(ctx context.Context, in io.Reader, out io.Writer) error {
	var spec workerSpec
	if err := json.NewDecoder(in).Decode(&spec); err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: spec.Addr})
	defer c.Close()
	requests, err := redislimit.New(c, spec.Prefix+"requests", spec.Requests, spec.RequestBurst)
	if err != nil {
		return err
	}
	defer requests.Close()
	tokens, err := redislimit.NewWindow(c, spec.Prefix+"tokens", spec.Tokens)
	if err != nil {
		return err
	}
	defer tokens.Close()
	conns, err := actor.NewPool(int64(spec.Pool))
	if err != nil {
		return err
	}
	defer conns.Close()
	lim := permits.All(tokens, permits.FixedCost(requests, 1), permits.FixedCost(conns, 1))

	base := &http.Transport{MaxIdleConnsPerHost: spec.Pool}
	defer base.CloseIdleConnections()
	transport, err := httplimit.NewTransport(lim,
		httplimit.WithBase(&demoapi.Recorder{Base: base, Jobs: demoapi.ByID(spec.Jobs)}),
		httplimit.WithRetry(retry.WithMaxAttempts(maxAttempts)),
		httplimit.WithSettle(demoapi.Usage),
		// One API, one quota: a 429 pauses the limiter, the Window in Redis
		// for every process.
		httplimit.WithPauseLimiter(),
	)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: transport}
	p := pool.New().WithContext(ctx).WithMaxGoroutines(spec.Workers)
	for _, j := range spec.Jobs {
		p.Go(func(ctx context.Context) error {
			_ = j.Run(ctx, client, spec.URL) // a job not done is counted by the parent
			return nil
		})
	}
	err = p.Wait()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(workerResult{Jobs: spec.Jobs, Transport: transport.Stats()})
}
