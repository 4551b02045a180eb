package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/demoapi"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// apiConfig is the -api mode's flags: examples/apiclient's, and how many
// processes share the quota.
type apiConfig struct {
	addr                                   string
	processes, jobs, workers               int
	rps                                    int
	tpm                                    int64
	tokenWindow                            time.Duration
	concurrency                            int
	minTokens, maxTokens                   int64
	latency                                time.Duration
	margin                                 int64
	overloadAt, overloadFor, overloadRetry time.Duration
	seed                                   uint64
}

func parseAPIFlags(args []string, stderr io.Writer) (apiConfig, error) {
	var c apiConfig
	fs := flag.NewFlagSet("redisquota -api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "", "Redis address (host:port); empty: start a redis-server of our own")
	fs.IntVar(&c.processes, "processes", 3, "client processes sharing the quota")
	fs.IntVar(&c.jobs, "jobs", 500, "jobs to process, dealt out to the processes in turn")
	fs.IntVar(&c.workers, "workers", 64, "goroutines in all, shared out between the processes")
	fs.IntVar(&c.rps, "rps", 50, "API quota: requests in any 1 s")
	fs.Int64Var(&c.tpm, "tpm", 1_200_000, "API quota: tokens per minute, enforced as their share of any token window")
	fs.DurationVar(&c.tokenWindow, "token-window", 2*time.Second, "API quota: the window the token quota is enforced over")
	fs.IntVar(&c.concurrency, "concurrency", 20, "API quota: requests served at once (shared out as the processes' pools)")
	fs.Int64Var(&c.minTokens, "min-tokens", 100, "smallest job's estimate (prompt + max_tokens), in tokens")
	fs.Int64Var(&c.maxTokens, "max-tokens", 1900, "largest job's estimate, in tokens")
	fs.DurationVar(&c.latency, "latency", 100*time.Millisecond, "mean time the API takes per request (each takes 0.5x to 1.5x)")
	fs.Int64Var(&c.margin, "margin", 1, "percent the shared limits stay below the quota")
	fs.DurationVar(&c.overloadAt, "overload-at", 8*time.Second, "when the API's overload starts, after its first request")
	fs.DurationVar(&c.overloadFor, "overload-for", 3*time.Second, "how long it lasts (0: none)")
	fs.DurationVar(&c.overloadRetry, "overload-retry-after", time.Second, "the Retry-After of an overloaded answer")
	fs.Uint64Var(&c.seed, "seed", 1, "seed for job costs, usage and latencies")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	return c, c.validate()
}

func (c apiConfig) validate() error {
	switch {
	case c.processes < 1 || c.processes > 64:
		return errors.New("-processes must be in [1, 64]")
	case c.jobs < c.processes || c.workers < c.processes || c.concurrency < c.processes:
		return errors.New("-jobs, -workers and -concurrency must be at least -processes")
	case c.rps < 1:
		return errors.New("-rps must be positive")
	case c.tpm < 1 || c.tpm > 1e12:
		return errors.New("-tpm must be in [1, 1e12]")
	case c.tokenWindow < time.Millisecond || c.tokenWindow > time.Minute:
		return errors.New("-token-window must be in [1ms, 1m]")
	case c.minTokens < 1 || c.maxTokens < c.minTokens:
		return errors.New("want 1 <= -min-tokens <= -max-tokens")
	case c.margin < 0 || c.margin >= 100:
		return errors.New("-margin is a percentage in [0, 100)")
	case c.latency <= 0:
		return errors.New("-latency must be positive")
	case c.overloadAt < 0 || c.overloadFor < 0 || c.overloadRetry < time.Second:
		return errors.New("-overload-at and -overload-for must not be negative, -overload-retry-after at least 1s")
	}
	if c.maxTokens >= c.tokenLimit() {
		return fmt.Errorf("-max-tokens %d must be below the API's token quota per window, %d", c.maxTokens, c.tokenLimit())
	}
	return nil
}

// tokenLimit is the API's token quota per token window.
func (c apiConfig) tokenLimit() int64 {
	return c.tpm * int64(c.tokenWindow/time.Millisecond) / int64(time.Minute/time.Millisecond)
}

func (c apiConfig) api() demoapi.Config {
	return demoapi.Config{
		RPS: c.rps, TokenLimit: c.tokenLimit(), TokenWindow: c.tokenWindow, MaxConcurrent: c.concurrency,
		Latency: c.latency, OverloadAt: c.overloadAt, OverloadFor: c.overloadFor, OverloadRetry: c.overloadRetry, Seed: c.seed,
	}
}

// The shared request limit is a GCRA in Redis: at rate r with burst b it
// admits at most b + r·d in any window d (docs/distributed.md). The API
// counts its windows at arrival, a little after the grant; a window longer
// by the margin (w·100/(100-margin)) covers that delay, as in apiclient. So
// b + r·w' = quota: r = (quota - b) per w'.
//
// The requests' burst is a fifth of the quota, not 1 as in apiclient:
// permits.All takes the rates together, and when one makes it wait it
// gives back the others and tries again; a GCRA grant in Redis comes back
// only while it is the key's latest admission, which with three processes
// it seldom still is. With a small burst the request rate would often
// refuse a request that comes right after another process's, and each
// such refusal gives the token grant back and sends the job to the back of
// the token window's line.
//
// The shared token limit is a sliding window in Redis, the API's quota
// over the window made longer by the margin, as in apiclient: it settles,
// so it counts the usage the API charges once a request has answered. It
// comes first in All, so that a job waits for its tokens before it takes
// a request slot, which a wait would waste.

// requestBurst is the shared request limit's burst.
func (c apiConfig) requestBurst() int64 { return max(int64(c.rps)/5, 1) }

// requests is the shared request rate.
func (c apiConfig) requests() algorithms.Rate {
	return algorithms.Rate{Count: int64(c.rps) - c.requestBurst(), Per: longer(time.Second, c.margin)}
}

// tokens is the shared token window.
func (c apiConfig) tokens() algorithms.Rate {
	return algorithms.Rate{Count: c.tokenLimit(), Per: longer(c.tokenWindow, c.margin)}
}

// longer returns w·100/(100-margin), rounded up.
func longer(w time.Duration, margin int64) time.Duration {
	return time.Duration((int64(w)*100 + 100 - margin - 1) / (100 - margin))
}

// share returns the i-th of n near-equal shares of total.
func share(total, n, i int) int {
	s := total / n
	if i < total%n {
		s++
	}
	return s
}

// apiResult is what a run of the -api mode measured.
type apiResult struct {
	cfg        apiConfig
	procs      []workerResult
	jobs       []*demoapi.Job
	done       int
	failed     int
	elapsed    time.Duration
	api        demoapi.Stats
	transport  httplimit.TransportStats // summed over the processes
	waitP50    time.Duration
	waitP99    time.Duration
	overtakes  int // within each process: jobs sent ahead of one that had waited fifoSlack longer
	quotaUsed  float64
	requestUse float64
	steady     time.Duration
}

// fifoSlack is the margin of the FIFO check, as in apiclient: a goroutine
// may be descheduled between taking its timestamp and reaching a queue.
const fifoSlack = 5 * time.Millisecond

// runAPI starts the API on loopback (and a redis-server, unless cfg.addr
// names one), runs cfg.processes client processes against it, and
// gathers what they did and what the API saw.
func runAPI(ctx context.Context, cfg apiConfig, stderr io.Writer) (*apiResult, error) {
	addr := cfg.addr
	if addr == "" {
		dir, err := os.MkdirTemp("", "redisquota-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		s, err := redistest.Start(dir)
		if errors.Is(err, redistest.ErrNotFound) {
			return nil, errors.New("redis-server not found: install it, or pass -addr")
		}
		if err != nil {
			return nil, err
		}
		defer s.Close()
		addr = s.Addr
	}
	// Keys of this run only, so that runs against one server do not meet.
	prefix := fmt.Sprintf("redisquota:api:%d:%d:", os.Getpid(), time.Now().UnixNano())
	c := redis.NewClient(&redis.Options{Addr: addr})
	err := c.Ping(ctx).Err()
	_ = c.Close()
	if err != nil {
		return nil, fmt.Errorf("redis at %s: %w", addr, err)
	}
	api := demoapi.New(cfg.api())
	srv := httptest.NewServer(api)
	defer srv.Close()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}

	all := demoapi.Jobs(cfg.jobs, cfg.minTokens, cfg.maxTokens, cfg.seed)
	res := &apiResult{cfg: cfg, procs: make([]workerResult, cfg.processes)}
	errs := make([]error, cfg.processes)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range cfg.processes {
		spec := workerSpec{
			URL: srv.URL, Addr: addr, Prefix: prefix,
			Requests: cfg.requests(), RequestBurst: cfg.requestBurst(), Tokens: cfg.tokens(),
			Pool: share(cfg.concurrency, cfg.processes, i), Workers: share(cfg.workers, cfg.processes, i),
		}
		for k := i; k < len(all); k += cfg.processes {
			spec.Jobs = append(spec.Jobs, all[k])
		}
		wg.Go(func() {
			res.procs[i], errs[i] = startWorker(ctx, self, spec, stderr)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("process %d: %w", i+1, errs[i])
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res.api = api.Snapshot()
	res.tally()
	return res, nil
}

// startWorker runs this program again as one client process, hands it
// spec on stdin and reads its result from stdout.
func startWorker(ctx context.Context, self string, spec workerSpec, stderr io.Writer) (workerResult, error) {
	in, err := json.Marshal(spec)
	if err != nil {
		return workerResult{}, err
	}
	cmd := exec.CommandContext(ctx, self, "-api-worker")
	cmd.Stdin, cmd.Stderr = bytes.NewReader(in), stderr
	out, err := cmd.Output()
	if err != nil {
		return workerResult{}, err
	}
	var r workerResult
	if err := json.Unmarshal(out, &r); err != nil {
		return workerResult{}, fmt.Errorf("its result: %w", err)
	}
	return r, nil
}

// tally computes the summary's figures from the processes' jobs and the
// API's record.
func (r *apiResult) tally() {
	for _, p := range r.procs {
		r.jobs = append(r.jobs, p.Jobs...)
		r.overtakes += demoapi.Overtakes(p.Jobs, fifoSlack)
		t := p.Transport
		r.transport.Requests += t.Requests
		r.transport.Attempts += t.Attempts
		r.transport.Retries += t.Retries
		r.transport.Throttled += t.Throttled
		r.transport.Pauses += t.Pauses
		r.transport.Settled += t.Settled
	}
	r.done, r.failed, r.waitP50, r.waitP99 = demoapi.Tally(r.jobs)
	r.quotaUsed, r.requestUse, r.steady = demoapi.QuotaUse(r.api, r.cfg.api())
}

// apiMain is the -api mode: it returns the exit code, 0 when every job was
// done (or -h asked for the usage), 1 when some were not, 2 for bad flags.
func apiMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseAPIFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "redisquota -api:", err)
		return 2
	}
	res, err := runAPI(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "redisquota -api:", err)
		return 1
	}
	res.print(stdout)
	if res.failed > 0 {
		return 1
	}
	return 0
}
