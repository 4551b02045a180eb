package main

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/sluicehq/sluice/httplimit"
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
func (c config) apiConfig() apiConfig {
	return apiConfig{
		rps: c.rps, tokenLimit: c.tokenLimit(), tokenWindow: time.Duration(c.tokenWindow), maxConcurrent: c.concurrency,
		latency: time.Duration(c.latency), overloadAt: time.Duration(c.overloadAt), overloadFor: time.Duration(c.overloadFor),
		overloadRetry: time.Duration(c.overloadRetry), seed: c.seed,
	}
}

// job is one unit of work and what happened to it.
type job struct {
	id                int
	prompt, maxTokens int64 // the estimate is their sum
	start             time.Time
	firstSent, sent   time.Time // the first attempt, and the last one (the one that succeeded, if done)
	attempts          int
	used              int64
	done              bool
}

func (j *job) estimate() int64 { return j.prompt + j.maxTokens }

// result is what a run measured.
type result struct {
	jobs       []*job
	done       int
	failed     int
	elapsed    time.Duration
	api        apiStats
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
func run(ctx context.Context, cfg config, api *api, base http.RoundTripper, url string, progress *progress) (*result, error) {
	requestsAlg, err := algorithms.NewGCRA(cfg.clientRequests(), 1)
	if err != nil {
		return nil, err
	}
	tokensAlg, err := algorithms.NewSlidingWindow(cfg.clientTokens())
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
		estimate := cfg.minTokens + rng.Int64N(cfg.maxTokens-cfg.minTokens+1)
		prompt := estimate / 3
		res.jobs[i] = &job{id: i, prompt: prompt, maxTokens: estimate - prompt}
	}
	opts := []httplimit.TransportOption{
		httplimit.WithBase(&recorder{base: base, jobs: res.jobs}),
		httplimit.WithRetry(retry.WithMaxAttempts(maxAttempts)),
	}
	if cfg.settle {
		opts = append(opts, httplimit.WithSettle(usage))
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
			j.run(ctx, client, url, &live)
			return nil
		})
	}
	err = p.Wait()
	res.elapsed = time.Since(start)
	stopProgress()
	if err == nil {
		err = ctx.Err()
	}
	res.api, res.transport = api.snapshot(), transport.Stats()
	res.tally(cfg)
	return res, err
}

// usage is the Transport's settle function: the tokens the API says the
// request used; a refusal used none.
func usage(resp *http.Response) (int64, bool) {
	if resp.StatusCode != http.StatusOK {
		return 0, true
	}
	n, err := strconv.ParseInt(resp.Header.Get("X-Usage-Tokens"), 10, 64)
	return n, err == nil && n >= 0
}

// liveCounts is what the progress line shows.
type liveCounts struct{ done, failed, tokens atomic.Int64 }

// run does the job: one request through the client, whose Transport
// waits, retries and settles.
func (j *job) run(ctx context.Context, client *http.Client, url string, live *liveCounts) {
	j.start = time.Now()
	body, _ := json.Marshal(completionRequest{PromptTokens: j.prompt, MaxTokens: j.maxTokens})
	req, err := http.NewRequestWithContext(httplimit.ContextWithCost(ctx, j.estimate()), http.MethodPost, url+"/v1/complete", bytes.NewReader(body))
	if err != nil {
		live.failed.Add(1)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Job-Id", strconv.Itoa(j.id))
	resp, err := client.Do(req)
	if err != nil {
		live.failed.Add(1)
		return
	}
	var out completionResponse
	err = json.NewDecoder(resp.Body).Decode(&out)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil {
		live.failed.Add(1)
		return
	}
	j.done, j.used = true, out.Usage.TotalTokens
	live.done.Add(1)
	live.tokens.Add(j.used)
}

// recorder is the Transport's base: it notes when each job's attempts are
// sent, then sends them. RoundTrip runs in the job's goroutine, so each
// job is written by its own goroutine only.
type recorder struct {
	base http.RoundTripper
	jobs []*job
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if id, err := strconv.Atoi(req.Header.Get("X-Job-Id")); err == nil && id >= 0 && id < len(r.jobs) {
		j := r.jobs[id]
		j.sent = time.Now()
		if j.attempts++; j.attempts == 1 {
			j.firstSent = j.sent
		}
	}
	return r.base.RoundTrip(req)
}

// tally computes the summary's figures from the jobs and the API's record.
func (r *result) tally(cfg config) {
	var waits []time.Duration
	var sent []*job
	for _, j := range r.jobs {
		if j.done {
			r.done++
			waits = append(waits, j.sent.Sub(j.start))
		} else {
			r.failed++
		}
		if !j.firstSent.IsZero() {
			sent = append(sent, j)
		}
	}
	r.waitP50, r.waitP99 = percentile(waits, 50), percentile(waits, 99)
	// FIFO: no job sent ahead of one that started fifoSlack before it.
	for _, a := range sent {
		for _, b := range sent {
			if b.start.Sub(a.start) >= fifoSlack && a.firstSent.Sub(b.firstSent) >= fifoSlack {
				r.overtakes++
			}
		}
	}
	r.quotaUsed, r.requestUse, r.steady = quotaUse(r.api, cfg)
	r.peakWindow = r.api.peakTokens
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[(len(d)-1)*p/100]
}

// quotaUse returns how full the API's token window was on average, as a
// share of its limit, over the steady part of the run: from one window
// after the first arrival to the last arrival, less the overload and the
// window after it (when the window starts empty, as at the start, and
// fills up). The window holds what the API charged: each request's
// estimate from its arrival until it answered, its real usage after. It
// also returns the same share for the request window (1 s, rps), and the
// length of the steady part.
func quotaUse(s apiStats, cfg config) (tokens, requests float64, steady time.Duration) {
	w := time.Duration(cfg.tokenWindow)
	spans := []span{{s.first.Add(w), s.last}}
	if cfg.overloadFor > 0 {
		spans = subtract(spans[0], span{s.overloadFrom, s.overloadTo.Add(w)})
	}
	for _, sp := range spans {
		steady += sp.length()
	}
	if steady <= 0 {
		return 0, 0, 0
	}
	var tokenArea, requestArea float64 // token·seconds, request·seconds
	for _, c := range s.charges {
		gone := c.at.Add(w)
		est, act := span{c.at, minTime(c.answeredAt, gone)}, span{c.answeredAt, gone}
		for _, sp := range spans {
			tokenArea += float64(c.estimate)*sp.overlap(est).Seconds() + float64(c.tokens)*sp.overlap(act).Seconds()
			requestArea += sp.overlap(span{c.at, c.at.Add(time.Second)}).Seconds()
		}
	}
	return tokenArea / (float64(cfg.tokenLimit()) * steady.Seconds()), requestArea / (float64(cfg.rps) * steady.Seconds()), steady
}

// span is the half-open interval [from, to).
type span struct{ from, to time.Time }

func (s span) length() time.Duration { return max(s.to.Sub(s.from), 0) }

func (s span) overlap(o span) time.Duration {
	return span{maxTime(s.from, o.from), minTime(s.to, o.to)}.length()
}

// subtract returns a less b, as zero, one or two spans.
func subtract(a, b span) []span {
	var out []span
	if left := (span{a.from, minTime(a.to, b.from)}); left.length() > 0 {
		out = append(out, left)
	}
	if right := (span{maxTime(a.from, b.to), a.to}); right.length() > 0 {
		out = append(out, right)
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
