package actor_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil/ownermodel"
)

type waitLog struct {
	mu sync.Mutex
	w  []time.Duration
}

func (o *waitLog) Waited(d time.Duration) { o.mu.Lock(); o.w = append(o.w, d); o.mu.Unlock() }

// A lane head that fell due at 300ms while the owner's wake-up stalled is
// served by the next wake-up; a floor change stamped at 320ms, in that
// wake-up's batch, comes after it: what was due by the change's stamp is
// granted first, so the lower-priority waiter the new floor puts first
// does not pass the higher-priority head that was due at 300ms. Without
// the stall the head is granted at 300ms by its timer.
func TestAFloorChangeDoesNotPassAHeadThatWasDueBeforeIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := ownermodel.NewPassStall("Schedule(", 150*time.Millisecond)
		g, err := algorithms.NewGCRA(algorithms.PerSecond(10), 3)
		require.NoError(t, err)
		obs := &waitLog{}
		l := actor.MustNew(g, actor.WithClock(clock), actor.WithObserver(obs))
		defer l.Close()
		hi, err := l.Lane("hi", 1, actor.WithPriority(2))
		require.NoError(t, err)
		lo, err := l.Lane("lo", 1, actor.WithPriority(0))
		require.NoError(t, err)
		_, err = l.TryAcquire(3)
		require.NoError(t, err, "the burst, at 0")
		synctest.Wait()
		var wg sync.WaitGroup
		wg.Go(func() { _, err := hi.Acquire(context.Background(), 3); assert.NoError(t, err) }) // due at 300ms
		synctest.Wait()
		time.Sleep(250 * time.Millisecond)
		clock.Arm() // lo's wake-up stalls at its end until 400ms
		wg.Go(func() { _, err := lo.Acquire(context.Background(), 1); assert.NoError(t, err) })
		time.Sleep(70 * time.Millisecond) // 320ms: the owner is still stalled
		require.NoError(t, l.SetPriorityFloor(0.5))
		wg.Wait()
		obs.mu.Lock()
		defer obs.mu.Unlock()
		t.Logf("waits: %v", obs.w)
		assert.Contains(t, obs.w, 300*time.Millisecond, "hi was due and grantable at 300ms, before the floor change at 320ms")
	})
}
