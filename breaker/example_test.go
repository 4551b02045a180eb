package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/sluicehq/sluice/breaker"
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

var errTooManyRequests = errors.New("429 too many requests")

// A classifier with three outcomes: a 429 says the caller exceeded a quota,
// not that the downstream is unwell, so it is Ignored; everything else goes
// to the default (the caller's own cancellation is Ignored too).
func ExampleWithClassifier() {
	b, err := breaker.New(
		breaker.WithName("search"),
		breaker.WithConsecutiveFailures(2),
		breaker.WithClassifier(func(err error) breaker.Outcome {
			if errors.Is(err, errTooManyRequests) {
				return breaker.Ignored
			}
			return breaker.DefaultClassifier(err)
		}),
	)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	b.Do(ctx, func(context.Context) error { return errUnavailable })
	for range 5 {
		b.Do(ctx, func(context.Context) error { return errTooManyRequests })
	}
	s := b.Snapshot()
	fmt.Println(s.State, s.Calls, s.ConsecutiveFailures)
	b.Do(ctx, func(context.Context) error { return errUnavailable }) // the second failure in a row
	var oe *breaker.OpenError
	if err := b.Do(ctx, func(context.Context) error { return nil }); errors.As(err, &oe) {
		fmt.Printf("%s: %v, retry after %v\n", oe.Name, oe.State, oe.RetryAfter.Round(time.Second))
	}
	// Output:
	// closed 1 1
	// search: open, retry after 30s
}

// Snapshot, ForceOpen and Reset, as an operator uses them during an
// incident.
func ExampleBreaker_ForceOpen() {
	b, err := breaker.New(breaker.WithName("payments"), breaker.WithOpenTimeout(10*time.Second))
	if err != nil {
		panic(err)
	}
	b.ForceOpen() // the downstream is being failed over: stop sending
	err = b.Do(context.Background(), func(context.Context) error { return nil })
	fmt.Println(err)
	s := b.Snapshot()
	fmt.Println(s.State, s.Forced)
	b.Reset() // back in service, counts cleared
	fmt.Println(b.State())
	// Output:
	// breaker "payments": forced open, retry after 10s
	// open true
	// closed
}

// A logger writes a line for every transition, none per call.
func ExampleWithLogger() {
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{} // for a stable output
		}
		return a
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: noTime}))
	b, _ := breaker.New(breaker.WithName("payments"), breaker.WithLogger(logger))
	b.ForceOpen()
	b.Reset()
	// Output:
	// level=WARN msg="sluice: breaker opened" sluice.breaker.name=payments sluice.breaker.state.from=closed sluice.breaker.state.to=open
	// level=INFO msg="sluice: breaker closed" sluice.breaker.name=payments sluice.breaker.state.from=open sluice.breaker.state.to=closed
}
