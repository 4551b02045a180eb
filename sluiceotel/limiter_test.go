package sluiceotel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/sluiceotel"
)

// The counters a collection reports are exactly those the limiter kept at
// that instant: a timeline of grants, a refusal, a waiter, its
// cancellation and a refund, collected twice in virtual time.
func TestACollectionReportsTheLimitersCountersAtThatInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mp, reader := newReader(t)
		gcra, err := algorithms.NewGCRA(algorithms.PerSecond(1), 2)
		if err != nil {
			t.Fatal(err)
		}
		lim := actor.MustNew(gcra, actor.WithName("api"))
		defer lim.Close()
		reg, err := sluiceotel.Register(mp.Meter("test"),
			sluiceotel.Limiter("api", lim.Stats, sluiceotel.Algorithm("GCRA")))
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()

		mustTry(t, lim, 2) // the burst: granted 2
		if _, err := lim.TryAcquire(1); err == nil {
			t.Fatal("a third TryAcquire at t0 was granted")
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { _, err := lim.Acquire(ctx, 1); done <- err }()
		synctest.Wait() // the waiter is queued for t0+1s
		const attrs = "{sluice.limiter.algorithm=GCRA,sluice.limiter.name=api}"
		assertLines(t, collect(t, reader),
			"counter sluice.limiter.granted"+attrs+" 2",
			"counter sluice.limiter.rejected"+attrs+" 1",
			"counter sluice.limiter.refunded"+attrs+" 0",
			"counter sluice.limiter.canceled"+attrs+" 0",
			"updown sluice.limiter.waiting"+attrs+" 1",
		)

		cancel()
		if err := <-done; err != context.Canceled {
			t.Fatalf("the canceled waiter returned %v", err)
		}
		time.Sleep(time.Second) // t0+1s: one unit back
		g, err := lim.TryAcquireGrant(1)
		if err != nil {
			t.Fatal(err)
		}
		if !lim.Refund(g) {
			t.Fatal("the refund of an unused grant was refused")
		}
		assertLines(t, collect(t, reader),
			"counter sluice.limiter.granted"+attrs+" 3",
			"counter sluice.limiter.rejected"+attrs+" 1",
			"counter sluice.limiter.refunded"+attrs+" 1",
			"counter sluice.limiter.canceled"+attrs+" 1",
			"updown sluice.limiter.waiting"+attrs+" 0",
		)
	})
}

func mustTry(t *testing.T, lim *actor.Limiter, n int) {
	t.Helper()
	for range n {
		if _, err := lim.TryAcquire(1); err != nil {
			t.Fatal(err)
		}
	}
}
