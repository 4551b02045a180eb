package permitstest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sourcegraph/conc/pool"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/permits/permitstest"
)

// fetchAll is the code under test: it fetches n pages with a few workers,
// each call limited by lim, and stops at the first error.
func fetchAll(ctx context.Context, lim permits.Limiter, n int) error {
	p := pool.New().WithContext(ctx).WithMaxGoroutines(4).WithCancelOnError().WithFirstError()
	for range n {
		p.Go(func(ctx context.Context) error {
			return permits.Do(ctx, lim, 1, func(ctx context.Context) error {
				time.Sleep(10 * time.Millisecond) // the request
				return nil
			})
		})
	}
	return p.Wait()
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
		rate := actor.MustNew(g)
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
