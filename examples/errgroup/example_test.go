package main_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// peak keeps the largest value it has seen.
type peak struct{ now, max atomic.Int64 }

func (p *peak) enter() {
	n := p.now.Add(1)
	for old := p.max.Load(); n > old && !p.max.CompareAndSwap(old, n); old = p.max.Load() {
	}
}
func (p *peak) leave() { p.now.Add(-1) }

// An errgroup worker loop: each worker acquires with the group's context,
// so that once one job fails, every worker waiting for capacity returns at
// once. errgroup's own SetLimit cannot do that: g.Go blocks, without a
// context, until a goroutine is free, so the loop feeding it keeps waiting
// for slots after the group has already failed; and it has no weights and
// no rate at all.
func Example() {
	requests, _ := algorithms.NewGCRA(algorithms.PerSecond(2000), 10)
	rate := actor.MustNew(requests)
	defer rate.Close()
	slots, _ := actor.NewPool(4)
	defer slots.Close()
	lim := permits.All(rate, slots) // 2000 calls/s, 4 at a time

	var started atomic.Int64
	var inFlight peak
	g, ctx := errgroup.WithContext(context.Background())
	jobs := make(chan int)
	g.Go(func() error {
		defer close(jobs)
		for j := range 1000 {
			select {
			case jobs <- j:
			case <-ctx.Done():
				return nil // stop feeding: the group failed
			}
		}
		return nil
	})
	for range 16 {
		g.Go(func() error {
			for j := range jobs {
				err := permits.Do(ctx, lim, 1, func(ctx context.Context) error {
					started.Add(1)
					inFlight.enter()
					defer inFlight.leave()
					if j == 40 {
						return fmt.Errorf("job %d: bad input", j)
					}
					time.Sleep(100 * time.Microsecond) // the call
					return nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := g.Wait()
	fmt.Println("error:", err)
	fmt.Println("at most 4 in flight:", inFlight.max.Load() <= 4)
	fmt.Println("stopped early:", started.Load() < 1000)
	fmt.Println("permits held afterwards:", slots.Stats().InFlight)
	// Output:
	// error: job 40: bad input
	// at most 4 in flight: true
	// stopped early: true
	// permits held afterwards: 0
}
