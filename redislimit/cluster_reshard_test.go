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
