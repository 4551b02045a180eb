package actor_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// Interleavings at the owner that once lost a wake-up or a check: each
// forces, with a hook on the owner, the interleaving that broke.

// TestPoolReleaseAsTheOwnerParksIsNotLost: a Release between the owner's
// denial of the head and its park used to find the owner awake, wake
// nobody, and leave the head waiting although the pool was empty.
func TestPoolReleaseAsTheOwnerParksIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, 1)
		defer p.Close()
		held, err := p.Acquire(context.Background(), 1)
		require.NoError(t, err)
		var once atomic.Bool
		actor.SetParkHook(p, func(queued int) {
			if queued == 1 && !once.Swap(true) {
				held.Release() // the owner has denied the head and not yet parked
			}
		})
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		pm, err := p.Acquire(ctx, 1)
		require.NoError(t, err, "the released unit must reach the head")
		assert.Equal(t, time.Duration(0), time.Since(t0), "granted as soon as the unit came back")
		assert.True(t, once.Load(), "the hook ran")
		pm.Release()
	})
}

// TestCostAboveABurstLoweredJustBeforeFailsAtOnce: a request that checked
// its cost against the old capacity and reached the owner in the batch
// right after a SetBurst that lowered it used to queue for a grant that
// could never come, and shut the fast path for everyone behind it.
func TestCostAboveABurstLoweredJustBeforeFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(1), 10))
		defer l.Close()
		tuned := make(chan error, 1)
		acquired := make(chan error, 1)
		var once atomic.Bool
		actor.SetParkHook(l, func(int) {
			if once.Swap(true) {
				return
			}
			// Both requests reach the inbox before the owner takes it: the
			// SetBurst first, then an Acquire that saw the burst of 10.
			go func() { tuned <- l.SetBurst(5) }()
			for actor.InboxDepth(l) < 1 {
				runtime.Gosched()
			}
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, err := l.Acquire(ctx, 8)
				acquired <- err
			}()
			for actor.InboxDepth(l) < 2 {
				runtime.Gosched()
			}
		})
		require.NoError(t, l.SetRate(algorithms.PerSecond(1))) // the owner answers, then parks
		synctest.Wait()
		require.True(t, once.Load(), "the hook ran")
		require.NoError(t, <-tuned)
		err := <-acquired
		assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
		assert.Equal(t, 0, l.Stats().Waiting)
		assert.True(t, l.Allow(), "nobody waits: the fast path is open")
	})
}

// TestRefundLetsTheHeadInAtOnce: a refund that frees room for the head
// grants it at once, as Settle(g, 0) does; it used to keep the instant the
// head was given before the refund, with the room unused meanwhile.
func TestRefundLetsTheHeadInAtOnce(t *testing.T) {
	for _, how := range []string{"refund", "settle to 0"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := actor.MustNew(gcra(t, algorithms.PerSecond(1), 1))
				defer l.Close()
				t0 := time.Now()
				g, err := l.TryAcquireGrant(1)
				require.NoError(t, err)
				granted := make(chan time.Duration, 1)
				go func() {
					_, err := l.Acquire(context.Background(), 1)
					assert.NoError(t, err)
					granted <- time.Since(t0)
				}()
				synctest.Wait()
				if how == "refund" {
					require.True(t, l.Refund(g))
				} else {
					require.NoError(t, l.Settle(g, 0))
				}
				assert.Equal(t, time.Duration(0), <-granted)
				_, err = l.TryAcquire(1)
				assert.ErrorIs(t, err, permits.ErrRateLimited, "the refunded unit went to the head, once")
			})
		})
	}
}
