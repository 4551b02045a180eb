package scenario

import (
	"context"

	"golang.org/x/sync/semaphore"

	"github.com/sluicehq/sluice/actor"
)

// PoolSize is large enough that Acquire never waits in Pool: the cost
// measured is taking and giving back capacity, not waiting for it.
const PoolSize = 1 << 20

// Pool returns the subjects of a concurrency limiter's Acquire followed by
// Release: sluice's actor.Pool and x/sync/semaphore's Weighted.
func Pool() []Micro {
	return []Micro{
		{Name: "sluice Pool", New: func() (func(int), func(), error) {
			p, err := actor.NewPool(PoolSize)
			if err != nil {
				return nil, nil, err
			}
			ctx := context.Background()
			return func(n int) {
				for range n {
					pm, err := p.Acquire(ctx, 1)
					if err == nil {
						pm.Release()
					}
				}
			}, func() { _ = p.Close() }, nil
		}},
		{Name: "x/sync/semaphore", New: func() (func(int), func(), error) {
			s := semaphore.NewWeighted(PoolSize)
			ctx := context.Background()
			return func(n int) {
				for range n {
					if s.Acquire(ctx, 1) == nil {
						s.Release(1)
					}
				}
			}, func() {}, nil
		}},
	}
}
