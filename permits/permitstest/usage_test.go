package permitstest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/permits/permitstest"
)

// fetchAll is the code under test: it fetches n pages with a few workers,
// each call limited by lim.
func fetchAll(ctx context.Context, lim permits.Limiter, n int) error {
	g, ctx := errgroup.WithContext(ctx)
	pages := make(chan int)
	g.Go(func() error {
		defer close(pages)
		for i := range n {
			select {
			case pages <- i:
			case <-ctx.Done():
				return nil
			}
		}
		return nil
	})
	for range 4 {
		g.Go(func() error {
			for range pages {
				err := permits.Do(ctx, lim, 1, func(ctx context.Context) error {
					time.Sleep(10 * time.Millisecond) // the request
					return nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// TestFetchAllLeaksNothing is the pattern: goleak checks that no goroutine
// outlives the test, permitstest that no permit does. VerifyNone is
// registered first, so that it runs after every other cleanup (which
// closes the limiters and checks the permits).
func TestFetchAllLeaksNothing(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	synctest.Test(t, func(t *testing.T) {
		g, err := algorithms.NewGCRA(algorithms.PerSecond(50), 5)
		if err != nil {
			t.Fatal(err)
		}
		rate := actor.New(g)
		t.Cleanup(func() { rate.Close() })
		conns, err := actor.NewPool(2)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conns.Close() })

		lim := permitstest.Track(t, permits.All(rate, conns), permitstest.WithStacks())
		if err := fetchAll(context.Background(), lim, 30); err != nil {
			t.Fatal(err)
		}
	})
}
