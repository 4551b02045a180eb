package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/retry"
)

var errUnavailable = errors.New("unavailable")

// A call retried until it succeeds.
func ExampleDo() {
	attempts := 0
	err := retry.Do(context.Background(), func(context.Context) error {
		attempts++
		if attempts < 3 {
			return errUnavailable
		}
		return nil
	}, retry.WithBackoff(time.Millisecond, 10*time.Millisecond))
	fmt.Println(err, attempts)
	// Output:
	// <nil> 3
}

// tooManyRequests is what an HTTP layer would return for a 429: the
// response's Retry-After, exposed through RetryAfterer.
type tooManyRequests struct{ retryAfter time.Duration }

func (e *tooManyRequests) Error() string                     { return "429 too many requests" }
func (e *tooManyRequests) RetryAfter() (time.Duration, bool) { return e.retryAfter, true }

// Do waits at least what the error asks for, and gives up at once when
// that is more than the time it has.
func ExampleRetryAfterer() {
	ctx := context.Background()
	start := time.Now()
	attempts := 0
	err := retry.Do(ctx, func(context.Context) error {
		if attempts++; attempts == 1 {
			return &tooManyRequests{retryAfter: 20 * time.Millisecond}
		}
		return nil
	}, retry.WithBackoff(0, 0))
	fmt.Println(err, attempts, time.Since(start) >= 20*time.Millisecond)

	err = retry.Do(ctx, func(context.Context) error {
		return &tooManyRequests{retryAfter: time.Hour}
	}, retry.WithMaxElapsed(time.Minute))
	fmt.Println(errors.Is(err, retry.ErrOutOfTime))
	fmt.Println(err)
	// Output:
	// <nil> 2 true
	// true
	// retry: no time left for the wait (1h0m0s, past the retry time limit) after 1 attempt: 429 too many requests
}

// A Permanent error is not retried.
func ExampleMarkPermanent() {
	attempts := 0
	err := retry.Do(context.Background(), func(context.Context) error {
		attempts++
		return retry.MarkPermanent(errors.New("400 bad request"))
	})
	fmt.Println(err, attempts)
	// Output:
	// 400 bad request 1
}

// The worked example of docs/resilience.md: a rate limiter paces every
// attempt, a circuit breaker decides whether to call at all, and the retry
// loop spends a retry budget that allows one retry for every two requests.
func Example_limiterBreakerBudget() {
	gcra, err := algorithms.NewGCRA(algorithms.PerSecond(100), 10)
	if err != nil {
		panic(err)
	}
	limiter := actor.MustNew(gcra)
	defer limiter.Close()
	br, err := breaker.New(breaker.WithName("inventory"), breaker.WithConsecutiveFailures(3))
	if err != nil {
		panic(err)
	}
	retries, err := budget.New(budget.WithName("inventory"), budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0.5))
	if err != nil {
		panic(err)
	}
	policy, err := retry.New(
		retry.WithBudget(retries),
		retry.WithMaxAttempts(4),
		retry.WithBackoff(time.Millisecond, 10*time.Millisecond),
		retry.WithMaxElapsed(time.Second),
	)
	if err != nil {
		panic(err)
	}

	// The downstream's answers, call by call, for each request.
	script := map[string][]error{
		"A": {nil},
		"B": {errUnavailable, nil},
		"C": {errUnavailable, nil},
		"D": {errUnavailable, errUnavailable, nil},
		"E": {nil},
	}
	request := func(ctx context.Context, name string) (calls int, err error) {
		err = policy.Do(ctx, func(ctx context.Context) error {
			// Pace every attempt, retries included, in FIFO order.
			if _, err := limiter.Acquire(ctx, 1); err != nil {
				return err
			}
			// The breaker refuses while the downstream is down, saying
			// for how long: Do waits that out, or gives up at once if it
			// is more than the time it has.
			return br.Do(ctx, func(context.Context) error {
				calls++
				return script[name][calls-1]
			})
		})
		return calls, err
	}
	ctx := context.Background()
	for _, name := range []string{"A", "B", "C", "D", "E"} {
		calls, err := request(ctx, name)
		var re *retry.Error
		switch {
		case err == nil:
			fmt.Printf("%s: ok after %d call(s)\n", name, calls)
		case errors.As(err, &re) && re.Reason == retry.ErrOutOfTime:
			fmt.Printf("%s: %d call(s), gave up at once: the breaker asks for %v\n", name, calls, re.Wait.Round(time.Second))
		default:
			fmt.Printf("%s: %d call(s): %v\n", name, calls, err)
		}
	}
	fmt.Printf("%+v\n", retries.Stats())
	// Output:
	// A: ok after 1 call(s)
	// B: ok after 2 call(s)
	// C: 1 call(s): retry: retry budget exhausted ("inventory") after 1 attempt: unavailable
	// D: 2 call(s): retry: retry budget exhausted ("inventory") after 2 attempts: unavailable
	// E: 0 call(s), gave up at once: the breaker asks for 30s
	// {Name:inventory Balance:0 Deposits:5 Withdrawals:2 Refusals:2}
}
