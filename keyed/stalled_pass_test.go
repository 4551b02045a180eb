package keyed_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil/ownermodel"
	"github.com/sluicehq/sluice/keyed"
)

// TestAKeysCallerWhoGaveUpWhileThePassStalledIsNotGranted is actor's rule
// per key: a waiter due at 100ms whose caller gives up at 50ms, while its
// shard's owner is descheduled at the end of its wake-up until 200ms, is
// cancelled, and a later caller of the key is not judged behind a grant
// nobody took (the full-volume model's seed 2283: a cost-1 Acquire that
// came after such a waiter looked as if it passed it).
func TestAKeysCallerWhoGaveUpWhileThePassStalledIsNotGranted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := ownermodel.NewPassStall("Schedule(", 200*time.Millisecond)
		l, err := keyed.NewGCRA[string](algorithms.PerSecond(10), 1, keyed.WithClock(clock))
		require.NoError(t, err)
		defer l.Close()
		_, err = l.TryAcquire("k", 1)
		require.NoError(t, err, "the burst, at 0")
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(50 * time.Millisecond); cancel() }()
		clock.Arm()
		_, err = l.Acquire(ctx, "k", 1) // due at 100ms
		assert.ErrorIs(t, err, context.Canceled)
		_, err = l.TryAcquire("k", 1)
		assert.NoError(t, err, "the unit the cancelled waiter did not take is there")
	})
}
