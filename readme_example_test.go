package sluice_test

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// The README's snippets, compiled: TestReadmeSnippetsCompile checks that
// every Go block of README.md is here (or is examples/quickstart) line for
// line, so a snippet that stops compiling fails the build.

func pictureInThirtySeconds(ctx context.Context, w http.ResponseWriter, estimatedTokens int64) error {
	// 1000 tokens per minute for an LLM API: GCRA paces it, bursts up to 1000.
	gcra, err := algorithms.NewGCRA(algorithms.PerMinute(1000), 1000)
	if err != nil {
		return err // zero, negative or overflowing configurations are errors, never panics
	}
	lim := actor.MustNew(gcra) // one goroutine owns it from now on
	defer lim.Close()          // ...until Close, which fails waiters with permits.ErrClosed

	// Waits in strict FIFO order; gives up at once if ctx's deadline comes before the
	// predicted grant (the error matches both permits.ErrRateLimited and
	// context.DeadlineExceeded, and says how long the wait would have been).
	if _, err := lim.Acquire(ctx, estimatedTokens); err != nil {
		return err
	}

	// Never waits; a refusal carries the exact RetryAfter.
	if _, err := lim.TryAcquire(1); err != nil {
		if d, ok := permits.RetryAfter(err); ok {
			w.Header().Set("Retry-After", strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
		}
	}
	return nil
}

type job struct{ Tokens int64 }

func rateTokensAndConcurrency(ctx context.Context, jobs []job, call func(context.Context, job) error) error {
	perRequest, _ := algorithms.NewGCRA(algorithms.PerSecond(28), 1) // (check the errors)
	perToken, _ := algorithms.NewGCRA(algorithms.PerMinute(1_140_000), 57_000)
	requests, tokens := actor.MustNew(perRequest), actor.MustNew(perToken)
	inflight, _ := actor.NewPool(20)
	// One request slot and one pool slot per call, the job's tokens from the token rate.
	api := permits.All(permits.FixedCost(requests, 1), tokens, permits.FixedCost(inflight, 1))

	p := pool.New().WithContext(ctx).WithMaxGoroutines(64) // sourcegraph/conc
	for _, job := range jobs {
		p.Go(func(ctx context.Context) error {
			return permits.Do(ctx, api, job.Tokens, func(ctx context.Context) error {
				return call(ctx, job) // the permit is released when this returns, even on panic
			})
		})
	}
	err := p.Wait()
	requests.Close()
	tokens.Close()
	inflight.Close()
	return err
}

func limitPerClient(mux *http.ServeMux) {
	perIP, _ := keyed.New(func(string) (algorithms.Algorithm, error) {
		return algorithms.NewSlidingWindow(algorithms.PerMinute(100))
	})
	defer perIP.Close()
	byIP, _ := httplimit.KeyByIP() // behind a proxy: httplimit.KeyByIP(httplimit.TrustProxies("10.0.0.0/8"))
	handler := httplimit.Middleware(perIP, byIP)(mux)
	http.ListenAndServe(":8080", handler) // 429 + Retry-After + RateLimit fields beyond 100 in any minute per IP
}

var _, _, _ = pictureInThirtySeconds, rateTokensAndConcurrency, limitPerClient
