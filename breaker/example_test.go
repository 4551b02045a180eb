package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
)

var errUnavailable = errors.New("unavailable")

func ExampleBreaker() {
	b, err := breaker.New(
		breaker.WithConsecutiveFailures(3),
		breaker.WithOnStateChange(func(from, to breaker.State) { fmt.Println(from, "->", to) }),
	)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 3 {
		b.Do(ctx, func(context.Context) error { return errUnavailable })
	}
	err = b.Do(ctx, func(context.Context) error {
		fmt.Println("not called while open")
		return nil
	})
	fmt.Println(errors.Is(err, breaker.ErrOpen), b.State())
	// Output:
	// closed -> open
	// true open
}

// Allow is for calls whose outcome arrives elsewhere; done takes the call's
// error.
func ExampleBreaker_Allow() {
	b, err := breaker.New()
	if err != nil {
		panic(err)
	}
	done, err := b.Allow()
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	// ... make the call ...
	done(nil)
	fmt.Println(b.State())
	// Output:
	// closed
}

// A retry loop: the breaker fails calls fast while the downstream is down,
// and the retry budget caps retries at a share of requests (here one retry
// for every two requests), so that retries cannot multiply the load on a
// struggling downstream. A rate limiter would pace the attempts: acquire a
// permit from it (package actor) at the top of each attempt.
func Example_retryLoop() {
	retries, _ := budget.New(budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0.5))
	b, _ := breaker.New(breaker.WithConsecutiveFailures(3))
	ctx := context.Background()

	// The downstream's answers, attempt by attempt, for each request.
	script := map[string][]error{
		"A": {nil},
		"B": {errUnavailable, nil},
		"C": {errUnavailable, nil},
		"D": {errUnavailable, errUnavailable, nil},
		"E": {nil},
	}
	request := func(name string) (attempts int, err error) {
		retries.Deposit() // every request pays into the budget
		for {
			// With a rate limiter: if err := limiter.Acquire(ctx, 1); err != nil { return attempts, err }
			err = b.Do(ctx, func(context.Context) error {
				attempts++
				return script[name][attempts-1]
			})
			switch {
			case err == nil:
				return attempts, nil
			case errors.Is(err, breaker.ErrOpen):
				return attempts, err // fail fast: retrying now cannot help
			case !retries.TryWithdraw():
				return attempts, fmt.Errorf("no retry budget: %w", err)
			}
			// Back off here before the next attempt.
		}
	}
	for _, name := range []string{"A", "B", "C", "D", "E"} {
		attempts, err := request(name)
		if oe := (*breaker.OpenError)(nil); errors.As(err, &oe) {
			fmt.Printf("%s: %d attempt(s), breaker open for another %v\n", name, attempts, oe.RetryAfter.Round(time.Second))
			continue
		}
		fmt.Printf("%s: %d attempt(s), error: %v\n", name, attempts, err)
	}
	// Output:
	// A: 1 attempt(s), error: <nil>
	// B: 2 attempt(s), error: <nil>
	// C: 1 attempt(s), error: no retry budget: unavailable
	// D: 2 attempt(s), error: no retry budget: unavailable
	// E: 0 attempt(s), breaker open for another 30s
}
