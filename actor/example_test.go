package actor_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

func ExampleLimiter_Acquire() {
	// 1000 tokens per minute for an LLM API, bursts up to 1000: each call
	// costs the tokens it will use.
	g, err := algorithms.NewGCRA(algorithms.PerMinute(1000), 1000)
	if err != nil {
		panic(err)
	}
	l, err := actor.New(g, actor.WithName("llm-tokens"))
	if err != nil {
		panic(err)
	}
	defer l.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := l.Acquire(ctx, 750)
	if err != nil {
		panic(err)
	}
	fmt.Println("granted", p.Cost(), "tokens")

	// The next 750 would be granted in 30s, after this context's deadline:
	// Acquire says so at once instead of waiting in vain.
	_, err = l.Acquire(ctx, 750)
	var rl *permits.RateLimitError
	if errors.As(err, &rl) {
		fmt.Println("refused now:", errors.Is(err, context.DeadlineExceeded), "retry after", rl.RetryAfter.Round(time.Second))
	}
	// Output:
	// granted 750 tokens
	// refused now: true retry after 30s
}

func ExampleLimiter_TryAcquire() {
	g, err := algorithms.NewGCRA(algorithms.PerSecond(2), 1) // one every 500ms
	if err != nil {
		panic(err)
	}
	l := actor.MustNew(g)
	defer l.Close()

	_, err = l.TryAcquire(1)
	fmt.Println("first:", err)
	_, err = l.TryAcquire(1)
	var rl *permits.RateLimitError
	if errors.As(err, &rl) {
		fmt.Println("second:", errors.Is(err, permits.ErrRateLimited), "retry after", rl.RetryAfter.Round(100*time.Millisecond))
	}
	// Output:
	// first: <nil>
	// second: true retry after 500ms
}

func ExampleLimiter_Close() {
	g, err := algorithms.NewGCRA(algorithms.PerHour(1), 1)
	if err != nil {
		panic(err)
	}
	l := actor.MustNew(g)
	l.Allow() // the next permit is an hour away

	waited := make(chan error)
	go func() {
		_, err := l.Acquire(context.Background(), 1)
		waited <- err
	}()
	for l.Stats().Waiting == 0 {
		runtime.Gosched() // until the waiter is queued
	}
	l.Close() // fails the waiter, and returns once the owner has exited

	fmt.Println("waiter:", errors.Is(<-waited, permits.ErrClosed))
	fmt.Println("later:", l.Wait(context.Background()))
	// Output:
	// waiter: true
	// later: sluice: limiter closed
}

// A logger tells the limiter's changes of state, never its requests.
func ExampleWithLogger() {
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{} // for a stable output
		}
		return a
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: noTime}))
	g, err := algorithms.NewGCRA(algorithms.PerSecond(10), 10)
	if err != nil {
		panic(err)
	}
	l := actor.MustNew(g, actor.WithName("llm"), actor.WithLogger(logger))
	defer l.Close()
	for range 100 {
		l.Allow() // no line
	}
	_ = l.SetRate(algorithms.PerMinute(300))
	_ = l.SetBurst(20)
	// Output:
	// level=INFO msg="sluice: limiter rate changed" sluice.limiter.name=llm rate=300/m
	// level=INFO msg="sluice: limiter burst changed" sluice.limiter.name=llm burst=20
}
