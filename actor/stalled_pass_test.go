package actor_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil/ownermodel"
)

// TestACallerWhoGaveUpWhileThePassStalledIsNotGranted: a waiter due at
// 100ms whose caller gives up at 50ms, while the owner is descheduled at
// the end of its wake-up until 200ms, is cancelled, not granted: the
// cancellation came before its due instant, and the owner serves it
// before the head that fell due meanwhile (owner.run: a new wake-up,
// cancellations first). Before, the pass granted the head from its fresh
// reading and the caller got a grant it had given up on.
func TestACallerWhoGaveUpWhileThePassStalledIsNotGranted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := ownermodel.NewPassStall("Schedule(", 200*time.Millisecond)
		g, err := algorithms.NewGCRA(algorithms.PerSecond(10), 1)
		require.NoError(t, err)
		l := actor.MustNew(g, actor.WithClock(clock))
		defer l.Close()
		_, err = l.TryAcquire(1)
		require.NoError(t, err, "the burst, at 0")
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(50 * time.Millisecond); cancel() }()
		clock.Arm()
		_, err = l.Acquire(ctx, 1) // due at 100ms
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, uint64(1), l.Stats().Granted, "only the burst")
		_, err = l.TryAcquire(1)
		assert.NoError(t, err, "the unit the cancelled waiter did not take is there")
	})
}
