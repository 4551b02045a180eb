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
	"github.com/sluicehq/sluice/permits"
)

// A Pause made while nobody waits outlives the switch to lanes: the fair
// order takes the FIFO's hold (and its latest grant) even when it adopts no
// waiter, so a lane's waiter queued during the pause is not granted in it.
func TestLanePauseSurvivesTheSwitch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := actor.MustNew(gcra(t, algorithms.PerSecond(100), 10))
		defer l.Close()
		require.NoError(t, l.Pause(t0.Add(time.Second)))
		ln, err := l.Lane("a", 1) // the FIFO is empty: nothing adopted
		require.NoError(t, err)
		g, err := ln.AcquireGrant(context.Background(), 1)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, g.At.Sub(t0), time.Second, "granted during the pause")
		assert.GreaterOrEqual(t, time.Since(t0), time.Second, "returned during the pause")
	})
}

// With lanes and WithMaxWait every waiter has an expiry entry, which stays
// in the list after its waiter was granted; the owner must tell a stale
// entry from a live one without reading the answered call's lane, which its
// caller may already be filling in for its next request (-race fails this
// when the entry does not keep the lane itself).
func TestLaneExpiryNeverReadsAnAnsweredCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(1000), 1), actor.WithMaxWait(time.Second))
		defer l.Close()
		a, err := l.Lane("a", 1)
		require.NoError(t, err)
		b, err := l.Lane("b", 1)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for _, ln := range []*actor.Lane{a, b, a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					_, err := ln.Acquire(context.Background(), 1)
					require.NoError(t, err)
				}
			}()
		}
		wg.Wait()
	})
}

// A waiter whose wait is exactly WithMaxWait is granted, with lanes as
// without: the owner grants what was due by an expiry's instant before it
// refuses the waiters whose wait ran out then.
func TestMaxWaitOfExactlyTheWaitIsGranted(t *testing.T) {
	for _, lanes := range []bool{false, true} {
		t.Run(map[bool]string{false: "fifo", true: "lanes"}[lanes], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				l := actor.MustNew(gcra(t, algorithms.PerSecond(100), 1), actor.WithMaxWait(20*time.Millisecond))
				defer l.Close()
				acq := func(ctx context.Context, cost int64) (permits.Grant, error) { return l.AcquireGrant(ctx, cost) }
				if lanes {
					ln, err := l.Lane("a", 1)
					require.NoError(t, err)
					acq = ln.AcquireGrant
				}
				require.True(t, l.Allow()) // the next unit at +10ms
				var wg sync.WaitGroup
				var outs [2]*laneOutcome
				for i := range outs {
					o := &laneOutcome{}
					outs[i] = o
					wg.Add(1)
					go func() {
						defer wg.Done()
						g, err := acq(context.Background(), 1)
						o.at, o.err = time.Since(t0), err
						if err == nil {
							o.at = g.At.Sub(t0)
						}
					}()
					synctest.Wait()
				}
				wg.Wait()
				for i, o := range outs {
					require.NoError(t, o.err, "waiter %d (predicted wait %dms <= max wait 20ms)", i, 10*(i+1))
					assert.Equal(t, time.Duration(i+1)*10*time.Millisecond, o.at)
				}
			})
		})
	}
}
