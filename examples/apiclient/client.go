package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// clientRequests is the client's request rate: rps less the margin, as an
// exact fraction (rps·(100-margin) per 100 s).
func (c config) clientRequests() algorithms.Rate {
	return algorithms.Rate{Count: int64(c.rps) * (100 - c.margin), Per: 100 * time.Second}
}

// clientTokens is the client's token rate, tpm less the margin.
func (c config) clientTokens() algorithms.Rate {
	return algorithms.Rate{Count: c.tpm * (100 - c.margin), Per: 100 * time.Minute}
}

// clientBurst is the client's token burst: the API's bucket less the margin.
func (c config) clientBurst() int64 { return c.tpmBurst * (100 - c.margin) / 100 }

// job is one unit of work and what happened to it.
type job struct {
	id       int
	tokens   int64
	arrived  time.Time // first Acquire called
	admitted time.Time // first permit granted
	attempts int
	done     bool
}

// result is what a run measured.
type result struct {
	jobs      []*job
	done      int
	failed    int
	tooMany   int // 429s received
	elapsed   time.Duration
	api       apiStats
	waitP50   time.Duration
	waitP99   time.Duration
	overtakes int // jobs admitted ahead of one that had waited fifoSlack longer
	// shares of the run during which a request waited for that limiter
	requestsBound, tokensBound float64
}

// fifoSlack is the margin of the FIFO check: between taking a timestamp
// and reaching a limiter's queue, or between two stages of permits.All
// (the pool, then the rates), a goroutine may be descheduled for a while
// on a busy machine. Under testing/synctest no time passes there.
const fifoSlack = 5 * time.Millisecond

// maxAttempts bounds the retries of a job answered 429.
const maxAttempts = 8

// run processes cfg.jobs jobs through the limiters against the API at url,
// with client. api is the server's own record, read for the summary.
func run(ctx context.Context, cfg config, api *api, client *http.Client, url string, progress *progress) (*result, error) {
	requestsAlg, err := algorithms.NewGCRA(cfg.clientRequests(), 1)
	if err != nil {
		return nil, err
	}
	tokensAlg, err := algorithms.NewGCRA(cfg.clientTokens(), cfg.clientBurst())
	if err != nil {
		return nil, err
	}
	requests, tokens := actor.New(requestsAlg), actor.New(tokensAlg)
	defer requests.Close()
	defer tokens.Close()
	conns, err := actor.NewPool(int64(cfg.concurrency))
	if err != nil {
		return nil, err
	}
	defer conns.Close()
	lim := permits.All(permits.FixedCost(requests, 1), tokens, permits.FixedCost(conns, 1))

	rng := rand.New(rand.NewPCG(cfg.seed, 1))
	res := &result{jobs: make([]*job, cfg.jobs)}
	for i := range res.jobs {
		res.jobs[i] = &job{id: i, tokens: cfg.minTokens + rng.Int64N(cfg.maxTokens-cfg.minTokens+1)}
	}

	var live liveCounts
	stopProgress := progress.start(cfg, &live, conns, requests, tokens)
	start := time.Now()
	p := pool.New().WithContext(ctx).WithMaxGoroutines(cfg.workers)
	for _, j := range res.jobs {
		p.Go(func(ctx context.Context) error {
			do(ctx, lim, client, url, j, &live)
			return nil
		})
	}
	err = p.Wait()
	res.elapsed = time.Since(start)
	stopProgress()
	if err == nil {
		err = ctx.Err()
	}
	res.api = api.stats()
	if n := live.samples.Load(); n > 0 {
		res.requestsBound = float64(live.requestsBound.Load()) / float64(n)
		res.tokensBound = float64(live.tokensBound.Load()) / float64(n)
	}
	res.tally()
	return res, err
}

// liveCounts is what the progress line shows.
type liveCounts struct {
	done, failed, tooMany, tokens atomic.Int64
	// samples of which rate limiter had a waiter: which limit bound
	samples, requestsBound, tokensBound atomic.Int64
}

// do runs one job: acquire everything the call needs, call, release.
func do(ctx context.Context, lim permits.Limiter, client *http.Client, url string, j *job, live *liveCounts) {
	for j.attempts < maxAttempts {
		j.attempts++
		arrived := time.Now()
		p, err := lim.Acquire(ctx, j.tokens)
		if err != nil {
			break // the run was cancelled
		}
		if j.attempts == 1 {
			j.arrived, j.admitted = arrived, time.Now()
		}
		status, retryAfter, err := call(ctx, client, url, j.tokens)
		p.Release()
		if err != nil {
			break
		}
		if status == http.StatusOK {
			j.done = true
			live.done.Add(1)
			live.tokens.Add(j.tokens)
			return
		}
		live.tooMany.Add(1)
		select { // honour Retry-After, then take new permits
		case <-time.After(retryAfter):
		case <-ctx.Done():
			return
		}
	}
	live.failed.Add(1)
}

// call makes one request and reads the whole answer.
func call(ctx context.Context, client *http.Client, url string, tokens int64) (status int, retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/complete", nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("X-Tokens", strconv.FormatInt(tokens, 10))
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, 0, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return resp.StatusCode, 0, nil
	case http.StatusTooManyRequests:
		s, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return resp.StatusCode, time.Duration(max(s, 1)) * time.Second, nil
	}
	return 0, 0, fmt.Errorf("API answered %s", resp.Status)
}

// tally computes the summary's figures from the jobs.
func (r *result) tally() {
	var waits []time.Duration
	var admitted []*job
	for _, j := range r.jobs {
		if j.done {
			r.done++
		} else {
			r.failed++
		}
		r.tooMany += max(j.attempts-1, 0)
		if !j.admitted.IsZero() {
			waits = append(waits, j.admitted.Sub(j.arrived))
			admitted = append(admitted, j)
		}
	}
	slices.Sort(waits)
	if n := len(waits); n > 0 {
		r.waitP50 = waits[(n-1)*50/100]
		r.waitP99 = waits[(n-1)*99/100]
	}
	// FIFO: no job admitted ahead of one that arrived fifoSlack before it.
	for _, a := range admitted {
		for _, b := range admitted {
			if b.arrived.Sub(a.arrived) >= fifoSlack && a.admitted.Sub(b.admitted) >= fifoSlack {
				r.overtakes++
			}
		}
	}
}

// print writes the summary.
func (r *result) print(w io.Writer, cfg config) {
	secs := r.elapsed.Seconds()
	allowedTokens := cfg.tpmBurst + int64(float64(cfg.tpm)*r.api.span.Minutes())
	pr := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	pr("")
	pr("sluice apiclient: %d jobs, %d workers (conc pool), permits.All(requests, tokens, pool)", cfg.jobs, cfg.workers)
	pr("")
	pr("  the API allows   %d requests in any 1 s, %s tokens/min (bucket of %s), %d at once",
		cfg.rps, grouped(cfg.tpm), grouped(cfg.tpmBurst), cfg.concurrency)
	pr("  the client uses  %.2f requests/s, %s tokens/min (burst %s), a pool of %d  (margin %d%%)",
		rate(cfg.clientRequests()), grouped(int64(rate(cfg.clientTokens())*60)), grouped(cfg.clientBurst()), cfg.concurrency, cfg.margin)
	pr("")
	pr("  done in          %.1fs", secs)
	pr("  jobs done        %d / %d", r.done, len(r.jobs))
	pr("  429s received    %d  (goal: 0)", r.tooMany)
	pr("  requests/s       %.1f on average, %d at most in any 1 s  (limit %d)", float64(r.api.accepted)/secs, r.api.peakPerSecond, cfg.rps)
	pr("  tokens/min       %s on average  (limit %s/min + a bucket of %s: at most %s in these %.1fs; used %s, %.0f%%)",
		grouped(int64(float64(r.api.tokens)/secs*60)), grouped(cfg.tpm), grouped(cfg.tpmBurst), grouped(allowedTokens),
		r.api.span.Seconds(), grouped(r.api.tokens), 100*float64(r.api.tokens)/float64(allowedTokens))
	reqUse, tokUse := r.use(cfg)
	pr("  bound by         %s  (of what the client's own limits allowed in these %.1fs: %.0f%% of the requests, %.0f%% of the tokens)",
		binding(reqUse, tokUse), r.api.span.Seconds(), 100*reqUse, 100*tokUse)
	pr("  waiting on       the request rate %.0f%% of the time, the token rate %.0f%%  (the API's bucket went down to %s)",
		100*r.requestsBound, 100*r.tokensBound, grouped(r.api.lowestLevel))
	pr("  wait p50 / p99   %v / %v  (Acquire to permit)", r.waitP50.Round(time.Millisecond), r.waitP99.Round(time.Millisecond))
	if r.overtakes == 0 {
		pr("  FIFO             kept: no job was admitted ahead of one that had waited %v longer", fifoSlack)
	} else {
		pr("  FIFO             broken: %d admissions ahead of a job that had waited %v longer", r.overtakes, fifoSlack)
	}
}

// use returns the share of its own request and token limits the client
// used over the run: what it sent over what burst + rate·span allowed.
func (r *result) use(cfg config) (requests, tokens float64) {
	minutes := r.api.span.Minutes()
	allowedRequests := 1 + rate(cfg.clientRequests())*r.api.span.Seconds()
	allowedTokens := float64(cfg.clientBurst()) + rate(cfg.clientTokens())*60*minutes
	return float64(r.api.accepted) / allowedRequests, float64(r.api.tokens) / allowedTokens
}

// binding names the limit that held the jobs back: the rate the client used
// the most of, or the pool when it used less than 90% of both.
func binding(requests, tokens float64) string {
	switch {
	case requests < 0.9 && tokens < 0.9:
		return "the pool (concurrency) or the API's latency"
	case tokens >= requests:
		return "the token rate"
	}
	return "the request rate"
}

func rate(r algorithms.Rate) float64 { return float64(r.Count) / r.Per.Seconds() }

// grouped formats n with thousands separators.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
