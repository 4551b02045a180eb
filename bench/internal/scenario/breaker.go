package scenario

import (
	"context"
	"errors"

	"github.com/sony/gobreaker/v2"

	"github.com/sluicehq/sluice/breaker"
)

// errBench is the failure that half of the breaker calls return.
var errBench = errors.New("bench: failed call")

// Breaker returns the subjects of a call through a closed circuit breaker
// with default settings: sluice's breaker.Do and gobreaker's Execute. With
// failing, every other call fails, so that both keep counting failures
// (neither trips: sluice's default trips on consecutive failures, gobreaker's
// on more than five in a row).
func Breaker(failing bool) []Micro {
	outcome := func(i int) error {
		if failing && i%2 == 1 {
			return errBench
		}
		return nil
	}
	return []Micro{
		{Name: "sluice breaker.Do", New: func() (func(int), func(), error) {
			b, err := breaker.New()
			if err != nil {
				return nil, nil, err
			}
			ctx := context.Background()
			return func(n int) {
				for i := range n {
					err := outcome(i)
					_ = b.Do(ctx, func(context.Context) error { return err })
				}
			}, func() {}, nil
		}},
		{Name: "gobreaker Execute", New: func() (func(int), func(), error) {
			cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{})
			return func(n int) {
				for i := range n {
					err := outcome(i)
					_, _ = cb.Execute(func() (struct{}, error) { return struct{}{}, err })
				}
			}, func() {}, nil
		}},
	}
}
