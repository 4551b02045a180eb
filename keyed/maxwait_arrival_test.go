package keyed_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// WithMaxWait is counted from the caller's arrival, not from the later
// moment a busy owner reads its clock: W holds k's unit due at 100ms; N
// arrives at 10ms and the owner, stalled, reads its clock at 50ms. N's grant
// at 200ms is 190ms after it came, beyond a MaxWait of 150ms: refused.
// Counted from the owner's reading it was 150ms, and N waited.
func TestAKeysMaxWaitIsCountedFromTheArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &stallClock{stall: 40 * time.Millisecond}
		l := newLimiter(t, gcra10, keyed.WithShards(1), keyed.WithClock(clock), keyed.WithMaxWait(150*time.Millisecond))
		_, err := l.TryAcquire("k", 2)
		require.NoError(t, err)
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = l.Acquire(context.Background(), "k", 1) }) // W, granted at 100ms
		synctest.Wait()
		time.Sleep(10 * time.Millisecond)
		clock.armed.Store(true) // the owner's next reading comes 40ms late
		_, nErr := l.Acquire(context.Background(), "k", 1)
		wg.Wait()
		assert.ErrorIs(t, nErr, permits.ErrRateLimited, "a grant at 200ms is 190ms after the arrival")
	})
}

// stallClock reads package time; once armed, the owner's next reading
// sleeps first: an owner descheduled before it reads the clock.
type stallClock struct {
	armed atomic.Bool
	stall time.Duration
}

func (c *stallClock) Now() time.Time {
	if c.armed.Load() && inShardOwner() && c.armed.CompareAndSwap(true, false) {
		time.Sleep(c.stall)
	}
	return time.Now()
}

func (c *stallClock) NewTimer(d time.Duration) keyed.Timer { return realTimer{time.NewTimer(d)} }
