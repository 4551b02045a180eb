package actor_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
)

// holdClock reads package time, and holds the next reading of a caller
// (before it reads) or of the owner (after it has read, and after it has
// let ownerSkip readings through) until released: the scheduler
// descheduling a goroutine at that step.
type holdClock struct {
	caller, owner atomic.Pointer[chan struct{}]
	ownerSkip     atomic.Int32
}

func (c *holdClock) Now() time.Time {
	if inOwner() {
		now := time.Now()
		if c.owner.Load() != nil && c.ownerSkip.Add(-1) < 0 {
			if ch := c.owner.Swap(nil); ch != nil {
				<-*ch
			}
		}
		return now
	}
	if ch := c.caller.Swap(nil); ch != nil {
		<-*ch
	}
	return time.Now()
}

func (c *holdClock) NewTimer(d time.Duration) actor.Timer { return lateClock{}.NewTimer(d) }

func hold(p *atomic.Pointer[chan struct{}]) chan struct{} {
	ch := make(chan struct{})
	p.Store(&ch)
	return ch
}

// A change the owner makes to the state (here a refund; a settle, SetRate
// and Pause take the same path) and a lock-free decision are ordered: a
// TryAcquire that found the owner idle, and was descheduled before it read
// the clock, decides after the owner has read its own only by way of the
// owner, behind the change. The owner closes the gate before it reads the
// clock; before, it read first, and the caller decided on the state at a
// later instant than the refund was made at, which gave back room the
// caller had taken.
func TestAChangeAndALockFreeDecisionAreOrdered(t *testing.T) {
	for _, change := range []string{"Refund", "Settle", "SetRate", "Pause"} {
		t.Run(change, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clock := &holdClock{}
				l := actor.MustNew(gcra(t, algorithms.PerSecond(2), 2), actor.WithClock(clock))
				defer l.Close()
				g, err := l.TryAcquireGrant(1)
				require.NoError(t, err)

				callerGo := hold(&clock.caller)
				var tried atomic.Bool
				var wg sync.WaitGroup
				wg.Go(func() { _, _ = l.TryAcquire(1); tried.Store(true) })
				synctest.Wait() // the caller found the owner idle, and is held at its clock

				clock.ownerSkip.Store(1) // the batch's reading; held at the change's own
				ownerGo := hold(&clock.owner)
				wg.Go(func() {
					switch change {
					case "Refund":
						assert.True(t, l.Refund(g))
					case "Settle":
						assert.NoError(t, l.Settle(g, 0))
					case "SetRate":
						assert.NoError(t, l.SetRate(algorithms.PerSecond(2)))
					case "Pause":
						assert.NoError(t, l.Pause(time.Now()))
					}
				})
				synctest.Wait() // the owner has read its clock, and is held

				close(callerGo)
				synctest.Wait()
				assert.False(t, tried.Load(), "the caller decided while the owner held a reading: it must go behind the change")
				close(ownerGo)
				wg.Wait()
				assert.True(t, tried.Load())
			})
		})
	}
}
