package keyed_test

import (
	"bytes"
	"context"
	"runtime"
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

// FIFO per key holds for an Acquire still on its way to the owner: A (2
// units) is denied on the key's cell and closes its gate; B (1 unit)
// comes after A but reaches the owner first. B waits behind A, so A is
// granted at 100ms and B at 200ms; before, B was granted at once, with
// the unit A was waiting for, and A waited until 200ms. A TryAcquire
// while A is on its way, or while B waits behind it, is refused.
func TestAnAcquireOnItsWayKeepsItsPlaceBeforeLaterArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		var l *keyed.Limiter[string]
		var wg sync.WaitGroup
		var bAt time.Duration
		var bErr, tryErr error
		l = newLimiter(t, gcra10, keyed.WithShards(1), keyed.WithClosedHook(func() {
			wg.Go(func() {
				_, bErr = l.Acquire(context.Background(), "k", 1)
				bAt = time.Since(t0)
			})
			synctest.Wait() // B is at the owner before A
			_, tryErr = l.TryAcquire("k", 1)
		}))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		_, err = l.Acquire(context.Background(), "k", 2)
		aAt := time.Since(t0)
		require.NoError(t, err)
		wg.Wait()
		require.NoError(t, bErr)
		assert.Equal(t, 100*time.Millisecond, aAt, "A first: it arrived first")
		assert.Equal(t, 200*time.Millisecond, bAt, "B behind A")
		assert.ErrorIs(t, tryErr, permits.ErrRateLimited, "nothing passes A")
		synctest.Wait()
		assert.True(t, keyed.FastPath(l, "k"), "the gate reopens once both are answered")
	})
}

// When the Acquire on its way gives up before the owner sees it, those
// that queued behind it are judged as if it had never come: B is granted
// the unit that was left at once... once the owner learns A is gone.
func TestLaterArrivalsGoOnWhenTheAcquireOnItsWayGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		var l *keyed.Limiter[string]
		var wg sync.WaitGroup
		var bAt time.Duration
		var bErr error
		ctx, cancel := context.WithCancel(context.Background())
		l = newLimiter(t, gcra10, keyed.WithShards(1), keyed.WithClosedHook(func() {
			wg.Go(func() {
				_, bErr = l.Acquire(context.Background(), "k", 1)
				bAt = time.Since(t0)
			})
			synctest.Wait()
			time.Sleep(30 * time.Millisecond)
			cancel()
		}))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		_, err = l.Acquire(ctx, "k", 2)
		require.ErrorIs(t, err, context.Canceled)
		wg.Wait()
		require.NoError(t, bErr)
		assert.Equal(t, 30*time.Millisecond, bAt, "granted once A is gone, with the unit that was left")
		synctest.Wait()
		assert.True(t, keyed.FastPath(l, "k"))
	})
}

// heldClock reads package time, and holds the owner's next reading, once
// armed, until released: the owner descheduled between its clock read and
// its take of the inbox, so that what callers send meanwhile comes in one
// batch.
type heldClock struct{ owner atomic.Pointer[chan struct{}] }

func (c *heldClock) Now() time.Time {
	now := time.Now()
	if inShardOwner() {
		if ch := c.owner.Swap(nil); ch != nil {
			<-*ch
		}
	}
	return now
}

func (c *heldClock) NewTimer(d time.Duration) keyed.Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time        { return t.t.C }
func (t realTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }
func (t realTimer) Stop() bool                 { return t.t.Stop() }

func inShardOwner() bool {
	buf := make([]byte, 4096)
	return bytes.Contains(buf[:runtime.Stack(buf, false)], []byte("internal/owner.(*Owner[...]).run("))
}

// A shard's owner handles the cancellations it takes before the arrivals
// it takes with them, as actor's does: W waits on k for the unit due at
// 100ms; at 50ms N arrives with a deadline at 150ms and W gives up, both
// in one batch. N gets W's unit at 100ms; judged behind W first, its
// grant at 200ms missed its deadline and it was refused.
func TestAKeysCancellationIsHandledBeforeTheArrivalsOfItsBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		clock := &heldClock{}
		l := newLimiter(t, gcra10, keyed.WithShards(1), keyed.WithClock(clock))
		_, err := l.TryAcquire("k", 2)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var wErr, nErr error
		var nAt time.Duration
		wg.Go(func() { _, wErr = l.Acquire(ctx, "k", 1) })
		synctest.Wait()
		time.Sleep(50 * time.Millisecond)
		release := make(chan struct{})
		clock.owner.Store(&release)
		wg.Go(func() {
			dl, stop := context.WithDeadline(context.Background(), t0.Add(150*time.Millisecond))
			defer stop()
			_, nErr = l.Acquire(dl, "k", 1)
			nAt = time.Since(t0)
		})
		synctest.Wait() // N sent; the owner is held at its reading
		cancel()
		synctest.Wait() // W's cancellation sent
		close(release)
		wg.Wait()
		assert.ErrorIs(t, wErr, context.Canceled)
		require.NoError(t, nErr, "N fits once W is gone")
		assert.Equal(t, 100*time.Millisecond, nAt, "N has W's unit")
		assert.Equal(t, uint64(1), l.Stats().Canceled)
	})
}

// The same when the Acquire on its way gives up within the batch that
// brings it: judged first (it waits: 2 units, 1 left), then cancelled, it
// leaves the gate to the owner to reopen, and B, queued behind it, is
// judged at once.
func TestLaterArrivalsGoOnWhenTheAcquireOnItsWayGivesUpInItsBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		clock := &heldClock{}
		var l *keyed.Limiter[string]
		var wg sync.WaitGroup
		var bAt time.Duration
		var bErr error
		ctx, cancel := context.WithCancel(context.Background())
		l = newLimiter(t, gcra10, keyed.WithShards(1), keyed.WithClock(clock), keyed.WithClosedHook(func() {
			release := make(chan struct{})
			clock.owner.Store(&release)
			wg.Go(func() {
				_, bErr = l.Acquire(context.Background(), "k", 1)
				bAt = time.Since(t0)
			})
			synctest.Wait() // B sent; the owner, woken for it, is held before its take
			cancel()
			wg.Go(func() {
				synctest.Wait() // A's request and its cancellation sent
				close(release)
			})
		}))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		_, err = l.Acquire(ctx, "k", 2)
		require.ErrorIs(t, err, context.Canceled)
		wg.Wait()
		require.NoError(t, bErr)
		assert.Equal(t, time.Duration(0), bAt, "the unit that was left")
		synctest.Wait()
		assert.True(t, keyed.FastPath(l, "k"), "the gate A closed is open again")
		assert.Equal(t, uint64(1), l.Stats().Canceled)
	})
}
