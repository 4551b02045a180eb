package main

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/demoapi"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// clientRequests is the client's request rate: rps less the margin, as an
// exact fraction (rps·(100-margin) per 100 s). A GCRA at that rate with a
// burst of 1 spaces the requests: rps of them span 1 s·(1+margin) and more,
// so at most rps arrive in any 1 s, and a pause that ends lets them go one
// after the other, not all at once.
func (c config) clientRequests() algorithms.Rate {
	return algorithms.Rate{Count: int64(c.rps) * (100 - c.margin), Per: 100 * time.Second}
}

// tokenLimit is the API's token quota per token window, counted in whole
// milliseconds of the window so that no product overflows (-tpm up to
// 10^12, the window up to a minute).
func (c config) tokenLimit() int64 {
	return c.tpm * int64(time.Duration(c.tokenWindow)/time.Millisecond) / int64(time.Minute/time.Millisecond)
}

// clientTokens is the client's token limit: the API's quota over a window
// longer by the margin (window·100/(100-margin), rounded up), so that an
// admission leaves the client's window only after it has left the API's,
// whatever the delay between the grant and the arrival (up to that much).
func (c config) clientTokens() algorithms.Rate {
	return algorithms.Rate{Count: c.tokenLimit(), Per: longer(time.Duration(c.tokenWindow), c.margin)}
}

// longer returns w·100/(100-margin), rounded up.
func longer(w time.Duration, margin int64) time.Duration {
	return time.Duration((int64(w)*100 + 100 - margin - 1) / (100 - margin))
}

// apiConfig is the API's side of the flags.
func (c config) apiConfig() demoapi.Config {
	return demoapi.Config{
		RPS: c.rps, TokenLimit: c.tokenLimit(), TokenWindow: time.Duration(c.tokenWindow), MaxConcurrent: c.concurrency,
		Latency: time.Duration(c.latency), OverloadAt: time.Duration(c.overloadAt), OverloadFor: time.Duration(c.overloadFor),
		OverloadRetry: time.Duration(c.overloadRetry), Seed: c.seed,
	}
}

// result is what a run measured.
type result struct {
	jobs       []*demoapi.Job
	done       int
	failed     int
	elapsed    time.Duration
	api        demoapi.Stats
	transport  httplimit.TransportStats
	waitP50    time.Duration
	waitP99    time.Duration
	overtakes  int     // jobs sent ahead of one that had waited fifoSlack longer
	quotaUsed  float64 // the API's token window, on average over steady, as a share of its limit
	requestUse float64 // the same for its request window
	steady     time.Duration
	peakWindow int64 // the most the API's token window held
}

// fifoSlack is the margin of the FIFO check: between taking a timestamp
// and reaching a limiter's queue, or between two stages of permits.All
// (the pool, then the rates), a goroutine may be descheduled for a while
// on a busy machine. Under testing/synctest no time passes there.
const fifoSlack = 5 * time.Millisecond

// maxAttempts bounds the attempts of a job: the overload's 429s are
// retried, each after its Retry-After.
const maxAttempts = 10

// run processes cfg.jobs jobs through a Transport over the limiters,
// against the API at url through base. api is the server's own record,
// read for the summary.
func run(ctx context.Context, cfg config, api *demoapi.API, base http.RoundTripper, url string, progress *progress) (*result, error) {
	requestsAlg, err := algorithms.NewGCRA(cfg.clientRequests(), 1)
	if err != nil {
		return nil, err
	}
	tokensAlg, err := algorithms.NewSlidingWindow(cfg.clientTokens())
	if err != nil {
		return nil, err
	}
	requests, tokens := actor.MustNew(requestsAlg), actor.MustNew(tokensAlg)
	defer requests.Close()
	defer tokens.Close()
	conns, err := actor.NewPool(int64(cfg.concurrency))
	if err != nil {
		return nil, err
	}
	defer conns.Close()
	lim := permits.All(permits.FixedCost(requests, 1), tokens, permits.FixedCost(conns, 1))

	res := &result{jobs: demoapi.Jobs(cfg.jobs, cfg.minTokens, cfg.maxTokens, cfg.seed)}
	opts := []httplimit.TransportOption{
		httplimit.WithBase(&demoapi.Recorder{Base: base, Jobs: demoapi.ByID(res.jobs)}),
		httplimit.WithRetry(retry.WithMaxAttempts(maxAttempts)),
		// One API, one quota: a 429 pauses the whole limiter, in its FIFO order.
		httplimit.WithPauseLimiter(),
	}
	if cfg.settle {
		opts = append(opts, httplimit.WithSettle(demoapi.Usage))
	}
	transport, err := httplimit.NewTransport(lim, opts...)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: transport}

	var live liveCounts
	stopProgress := progress.start(cfg, &live, transport, conns)
	start := time.Now()
	p := pool.New().WithContext(ctx).WithMaxGoroutines(cfg.workers)
	for _, j := range res.jobs {
		p.Go(func(ctx context.Context) error {
			if j.Run(ctx, client, url) != nil {
				live.failed.Add(1)
				return nil
			}
			live.done.Add(1)
			live.tokens.Add(j.Used)
			return nil
		})
	}
	err = p.Wait()
	res.elapsed = time.Since(start)
	stopProgress()
	if err == nil {
		err = ctx.Err()
	}
	res.api, res.transport = api.Snapshot(), transport.Stats()
	res.tally(cfg)
	return res, err
}

// liveCounts is what the progress line shows.
type liveCounts struct{ done, failed, tokens atomic.Int64 }

// tally computes the summary's figures from the jobs and the API's record.
func (r *result) tally(cfg config) {
	r.done, r.failed, r.waitP50, r.waitP99 = demoapi.Tally(r.jobs)
	r.overtakes = demoapi.Overtakes(r.jobs, fifoSlack)
	r.quotaUsed, r.requestUse, r.steady = demoapi.QuotaUse(r.api, cfg.apiConfig())
	r.peakWindow = r.api.PeakTokens
}
