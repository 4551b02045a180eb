package sluiceotel_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/sluiceotel"
)

// A pool reports the limiter counters and the units it holds and can hold.
func TestAPoolReportsItsUsageAndLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, reader := newReader(t)
		pool, err := actor.NewPool(3)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		reg, err := sluiceotel.Register(mp.Meter("test"), sluiceotel.Pool("db", pool.Stats))
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()

		held, err := pool.Acquire(t.Context(), 2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.TryAcquire(2); err == nil {
			t.Fatal("4 units of a pool of 3 were granted")
		}
		const at = "{sluice.limiter.name=db}"
		assertLines(t, collect(t, reader),
			"counter sluice.limiter.granted"+at+" 1",
			"counter sluice.limiter.rejected"+at+" 1",
			"counter sluice.limiter.refunded"+at+" 0",
			"counter sluice.limiter.canceled"+at+" 0",
			"updown sluice.limiter.waiting"+at+" 0",
			"updown sluice.pool.usage"+at+" 2",
			"updown sluice.pool.limit"+at+" 3",
		)
		held.Release()
		if got := collect(t, reader); !slices.Contains(got, "updown sluice.pool.usage"+at+" 0") {
			t.Errorf("after the release: %q", got)
		}
	})
}

// A keyed limiter reports its counters over every key, and its live keys;
// the keys themselves are never attributes.
func TestAKeyedLimiterReportsItsKeysButNoKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, reader := newReader(t)
		perIP, err := keyed.NewGCRA[string](algorithms.PerSecond(1), 1)
		if err != nil {
			t.Fatal(err)
		}
		defer perIP.Close()
		reg, err := sluiceotel.Register(mp.Meter("test"),
			sluiceotel.Keyed("per-ip", perIP.Stats, sluiceotel.Algorithm("GCRA")))
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()

		for _, ip := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.1"} {
			_, _ = perIP.TryAcquire(ip, 1) // the second try of .1 is refused
		}
		const at = "{sluice.limiter.algorithm=GCRA,sluice.limiter.name=per-ip}"
		assertLines(t, collect(t, reader),
			"counter sluice.limiter.granted"+at+" 2",
			"counter sluice.limiter.rejected"+at+" 1",
			"counter sluice.limiter.refunded"+at+" 0",
			"counter sluice.limiter.canceled"+at+" 0",
			"updown sluice.limiter.waiting"+at+" 0",
			"updown sluice.limiter.keys"+at+" 2",
		)
	})
}

var errDown = errors.New("down")

// A breaker's state is a gauge per state, 1 for the current one, and its
// transitions a counter read from its Snapshot: no hook is needed.
func TestABreakerReportsItsStateAndEveryTransition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, reader := newReader(t)
		br, err := breaker.New(breaker.WithName("upstream"),
			breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		reg, err := sluiceotel.Register(mp.Meter("test"), sluiceotel.Breaker(br.Snapshot))
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()

		_ = br.Do(t.Context(), func(context.Context) error { return errDown })
		const at = "sluice.breaker.name=upstream"
		assertLines(t, collect(t, reader),
			"gauge sluice.breaker.state{"+at+",sluice.breaker.state=closed} 0",
			"gauge sluice.breaker.state{"+at+",sluice.breaker.state=open} 1",
			"gauge sluice.breaker.state{"+at+",sluice.breaker.state=half-open} 0",
			"counter sluice.breaker.transitions{"+at+"} 1",
		)
		time.Sleep(time.Second) // the open timeout: the probe closes it
		if err := br.Do(t.Context(), func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		assertLines(t, collect(t, reader),
			"gauge sluice.breaker.state{"+at+",sluice.breaker.state=closed} 1",
			"gauge sluice.breaker.state{"+at+",sluice.breaker.state=open} 0",
			"gauge sluice.breaker.state{"+at+",sluice.breaker.state=half-open} 0",
			"counter sluice.breaker.transitions{"+at+"} 3", // open, half-open, closed
		)
	})
}

// A budget's figures are those of its window: they fall back to zero when
// the window has passed.
func TestABudgetReportsItsWindowAndBalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, reader := newReader(t)
		b, err := budget.New(budget.WithName("retries"), budget.WithMinRetriesPerSec(0),
			budget.WithTTL(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		reg, err := sluiceotel.Register(mp.Meter("test"), sluiceotel.Budget(b.Stats))
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()

		for range 10 {
			b.Deposit() // 20% of 10: two retries
		}
		for range 3 {
			b.TryWithdraw() // the third is refused
		}
		const at = "{sluice.budget.name=retries}"
		assertLines(t, collect(t, reader),
			"gauge sluice.budget.balance"+at+" 0",
			"gauge sluice.budget.deposits"+at+" 10",
			"gauge sluice.budget.withdrawals"+at+" 2",
			"gauge sluice.budget.refusals"+at+" 1",
		)
		time.Sleep(time.Second)
		assertLines(t, collect(t, reader),
			"gauge sluice.budget.balance"+at+" 0",
			"gauge sluice.budget.deposits"+at+" 0",
			"gauge sluice.budget.withdrawals"+at+" 0",
			"gauge sluice.budget.refusals"+at+" 0",
		)
	})
}
