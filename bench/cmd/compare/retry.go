package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/sluicehq/sluice/bench/internal/scenario"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/retry"
)

// goalRetry is the goal for a first attempt that succeeds: at most
// this many ns beyond calling fn directly, and no allocation.
const goalRetry = 50

func measureRetry(r *runner, b *strings.Builder) {
	b.WriteString("## Retry loop\n\n")
	fmt.Fprintf(b, "ns per call whose first attempt succeeds, one goroutine, all subjects in the same run: the cost of the retry loop around fn. "+
		"*overhead* is a subject's time minus calling fn directly. Goal: sluice `retry` ≤ %d ns overhead and 0 allocs. "+
		"The budget row adds a `Deposit` (a monotonic clock read and a short lock); the breaker rows put the loop around `breaker.Do`, "+
		"with gobreaker's `Execute` alone for scale. Go's usual retry libraries are not in bench/'s go.mod, so the baseline is the direct call.\n\n", goalRetry)
	subjects := retrySubjects()
	m := r.micros("retry", 1, subjects)
	t := table{header: []string{"subject", "cost", "overhead", "goal met"}}
	for i, s := range subjects {
		over, met := "–", "–"
		if i > 0 && m[i].ok && m[0].ok {
			over = formatNs(m[i].ns - m[0].ns)
			if i <= 3 { // the loop alone: Policy.Do and both forms of retry.Do
				met = yesNo(m[i].ns-m[0].ns <= goalRetry && m[i].allocs < 0.01)
			}
		}
		t.add(s.Name, m[i].cell(), over, met)
	}
	t.write(b)
}

var errRetryCompare = errors.New("compare: failed attempt")

// retrySubject returns a subject that runs call n times.
func retrySubject(name string, setup func() (func(ctx context.Context) error, error)) scenario.Micro {
	return scenario.Micro{Name: name, New: func() (func(int), func(), error) {
		call, err := setup()
		if err != nil {
			return nil, nil, err
		}
		ctx := context.Background()
		return func(n int) {
			for range n {
				_ = call(ctx)
			}
		}, func() {}, nil
	}}
}

func succeedCompare(context.Context) error { return nil }

func retrySubjects() []scenario.Micro {
	policy := func(opts ...retry.Option) func() (func(context.Context) error, error) {
		return func() (func(context.Context) error, error) {
			p, err := retry.New(opts...)
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context) error { return p.Do(ctx, succeedCompare) }, nil
		}
	}
	return []scenario.Micro{
		retrySubject("fn called directly (baseline)", func() (func(context.Context) error, error) {
			return succeedCompare, nil
		}),
		retrySubject("sluice retry Policy.Do", policy(retry.WithMaxAttempts(5), retry.WithBackoff(time.Millisecond, time.Second))),
		retrySubject("sluice retry.Do, no options", func() (func(context.Context) error, error) {
			return func(ctx context.Context) error { return retry.Do(ctx, succeedCompare) }, nil
		}),
		retrySubject("sluice retry.Do, 3 options built once", func() (func(context.Context) error, error) {
			opts := []retry.Option{retry.WithMaxAttempts(5), retry.WithBackoff(time.Millisecond, time.Second), retry.WithMaxElapsed(time.Second)}
			return func(ctx context.Context) error { return retry.Do(ctx, succeedCompare, opts...) }, nil
		}),
		retrySubject("sluice retry Policy.Do with a budget", func() (func(context.Context) error, error) {
			rb, err := budget.New()
			if err != nil {
				return nil, err
			}
			return policy(retry.WithBudget(rb))()
		}),
		retrySubject("sluice breaker.Do", func() (func(context.Context) error, error) {
			br, err := breaker.New()
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context) error { return br.Do(ctx, succeedCompare) }, nil
		}),
		retrySubject("sluice retry Policy.Do around breaker.Do", func() (func(context.Context) error, error) {
			br, err := breaker.New()
			if err != nil {
				return nil, err
			}
			p, err := retry.New()
			if err != nil {
				return nil, err
			}
			attempt := func(ctx context.Context) error { return br.Do(ctx, succeedCompare) }
			return func(ctx context.Context) error { return p.Do(ctx, attempt) }, nil
		}),
		retrySubject("gobreaker Execute", func() (func(context.Context) error, error) {
			cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{})
			return func(context.Context) error {
				_, err := cb.Execute(func() (struct{}, error) { return struct{}{}, nil })
				return err
			}, nil
		}),
		retrySubject("one retry, no wait (retry path)", func() (func(context.Context) error, error) {
			p, err := retry.New(retry.WithBackoff(0, 0))
			if err != nil {
				return nil, err
			}
			failed := false
			attempt := func(context.Context) error {
				if failed = !failed; failed {
					return errRetryCompare
				}
				return nil
			}
			return func(ctx context.Context) error { return p.Do(ctx, attempt) }, nil
		}),
	}
}
