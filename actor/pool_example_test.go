package actor_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

func ExamplePool() {
	// At most 4 requests in flight to a downstream, from 20 goroutines.
	pool, err := actor.NewPool(4)
	if err != nil {
		panic(err)
	}
	defer pool.Close()

	var inFlight, peak atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := pool.Acquire(context.Background(), 1)
			if err != nil {
				return
			}
			defer p.Release()
			n := inFlight.Add(1)
			for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
			}
			time.Sleep(time.Millisecond) // the call
			inFlight.Add(-1)
		}()
	}
	wg.Wait()
	fmt.Println("at most", peak.Load(), "in flight; granted", pool.Stats().Granted)
	// Output: at most 4 in flight; granted 20
}

func ExamplePool_Acquire_weighted() {
	// A memory budget in MiB: each job holds what it needs while it runs.
	pool, err := actor.NewPool(1024)
	if err != nil {
		panic(err)
	}
	defer pool.Close()

	big, _ := pool.Acquire(context.Background(), 900)
	// 124 MiB are free: a 200 MiB job waits; its context gives up after 10ms.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = pool.Acquire(ctx, 200)
	fmt.Println("200 MiB while 900 are held:", errors.Is(err, context.DeadlineExceeded))

	big.Release()
	big.Release() // a second Release does nothing
	p, err := pool.Acquire(context.Background(), 200)
	fmt.Println("after the release:", err == nil, pool.Stats().InFlight, "MiB held")
	p.Release()

	_, err = pool.Acquire(context.Background(), 2048)
	fmt.Println("2048 MiB:", errors.Is(err, permits.ErrCostExceedsCapacity))
	// Output:
	// 200 MiB while 900 are held: true
	// after the release: true 200 MiB held
	// 2048 MiB: true
}

func ExamplePool_TryAcquire() {
	pool, err := actor.NewPool(2)
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	a, _ := pool.TryAcquire(2)
	_, err = pool.TryAcquire(1)
	fmt.Println("full:", errors.Is(err, permits.ErrRateLimited))
	a.Release()
	b, err := pool.TryAcquire(1)
	fmt.Println("after release:", err == nil)
	b.Release()
	// Output:
	// full: true
	// after release: true
}
