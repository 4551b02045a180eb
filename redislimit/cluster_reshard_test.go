package redislimit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// TestBoundHoldsWhileAKeysSlotMoves moves a key's slot from master to
// master (SETSLOT IMPORTING and MIGRATING, MIGRATE, SETSLOT NODE) while
// callers take from it: its calls meet ASK while the slot migrates and
// MOVED after, the owner's grouping by node goes stale, and the key's
// state travels with MIGRATE; what is granted stays within the bound,
// burst + rate × the run, counted from before the first call to after the
// last.
func TestBoundHoldsWhileAKeysSlotMoves(t *testing.T) {
	cl := redistest.TestCluster(t, 3)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { c.Close() })
	rate, burst := algorithms.PerSecond(200), int64(5)
	k, err := redislimit.NewKeyed(c, "move:", rate, burst)
	require.NoError(t, err)
	t.Cleanup(func() { k.Close() })
	slot := int(redislimit.KeySlot(k.RedisKey("mover")))

	var granted, unavailable atomic.Int64
	var other atomic.Value
	count := func(err error) {
		switch {
		case err == nil:
			granted.Add(1)
		case errors.Is(err, permits.ErrRateLimited), errors.Is(err, context.DeadlineExceeded):
		case errors.Is(err, redislimit.ErrUnavailable):
			unavailable.Add(1) // failed closed: nothing granted
		default:
			other.CompareAndSwap(nil, err)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for g := range 6 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if g%2 == 0 {
					_, err := k.TryAcquire("mover", 1)
					count(err)
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				_, err := k.Acquire(ctx, "mover", 1)
				cancel()
				count(err)
			}
		})
	}
	moves := 0
	for range 6 {
		time.Sleep(150 * time.Millisecond) // callers at work between moves, whatever their pace
		require.NoError(t, cl.MoveSlot(slot, (cl.Owner(slot)+1)%len(cl.Servers)))
		moves++
	}
	close(done)
	wg.Wait()
	elapsed := time.Since(start)
	bound := burst + int64(elapsed.Seconds()*float64(rate.Count))
	t.Logf("%d moves in %v: %d granted against a bound of %d, %d failed closed", moves, elapsed, granted.Load(), bound, unavailable.Load())
	assert.Nil(t, other.Load(), "only grants, refusals, deadlines and failures closed")
	assert.LessOrEqual(t, granted.Load(), bound)
	assert.Greater(t, granted.Load(), burst, "the key kept serving through the moves")
}

// TestAMovedKeyServesWhileItsOldMasterHangs moves a key's slot to
// another master, then stops the old one: the owner's grouping still has
// the key with its old master for a moment, so a call or two may fail
// with it, but the failure drops the stale route and the key is served by
// its new master from then on.
func TestAMovedKeyServesWhileItsOldMasterHangs(t *testing.T) {
	cl := redistest.TestCluster(t, 3)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { c.Close() })
	// A call timeout well below the owner's routes' lifetime (1 s), so
	// that the route is dropped for the failure, not for its age.
	const timeout = 400 * time.Millisecond
	k, err := redislimit.NewKeyed(c, "moved:", benchRate, benchBurst, redislimit.WithCallTimeout(timeout))
	require.NoError(t, err)
	t.Cleanup(func() { k.Close() })
	keys := clusterKeys(cl, k, 2)
	moved, stays := keys[0][0], keys[0][1] // both on master 0
	waitServing(t, k, moved, stays)
	slot := int(redislimit.KeySlot(k.RedisKey(moved)))
	require.NoError(t, cl.MoveSlot(slot, 1))
	waitServing(t, k, moved) // go-redis met MOVED and knows the new master
	old := cl.Servers[0]
	t.Cleanup(old.Continue)
	old.Stop()

	// Both keys asked together, so that they meet in one batch while the
	// route is stale.
	var ok, failed int
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) {
		var wg sync.WaitGroup
		var errMoved error
		wg.Go(func() { _, errMoved = k.Acquire(context.Background(), moved, 1) })
		wg.Go(func() { _, _ = k.Acquire(context.Background(), stays, 1) })
		wg.Wait()
		if errMoved == nil {
			ok++
		} else {
			require.ErrorIs(t, errMoved, redislimit.ErrUnavailable)
			failed++
		}
	}
	t.Logf("the moved key: %d granted, %d failed with its old master", ok, failed)
	assert.LessOrEqual(t, failed, 3, "a stale route fails a call or so, not the hang")
	assert.Positive(t, ok)
}
