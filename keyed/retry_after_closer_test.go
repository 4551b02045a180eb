package keyed_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// The RetryAfter of a TryAcquire refused behind an Acquire that closed its
// key's gate on its way to the owner counts that Acquire's units, and
// those of the Acquires that queued behind it before the owner judged it
// (issue 25, item 3): a newcomer waits for all of them. Before, it was the
// time until the TryAcquire's units and one more fitted. All at 10 a
// second with bursts of 3, the burst taken at 0: A (3 units) is granted at
// 300ms, B (2) at 500ms, a newcomer's unit at 600ms.

// gcra10x3 is 10 a second with bursts of 3: one unit every 100ms.
var gcra10x3 = gcraPer[string](algorithms.PerSecond(10), 3)

// W1: A has closed the gate, and announced its cost, but not yet taken the
// shard's lock to pin its key; B came after it and waits at the owner,
// undecided, behind it.
func TestTryAcquireBehindAnAcquireClosingTheGateCountsItsUnits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l *keyed.Limiter[string]
		var wg sync.WaitGroup
		var alone, behindB error
		var bAt time.Time
		l = newLimiter(t, gcra10x3, keyed.WithShards(1), keyed.WithClosedHook(func() {
			_, alone = l.TryAcquire("k", 1)
			wg.Go(func() {
				_, err := l.Acquire(context.Background(), "k", 2)
				assert.NoError(t, err, "B")
				bAt = time.Now()
			})
			synctest.Wait() // B is at the owner, held behind A
			_, behindB = l.TryAcquire("k", 1)
		}))
		_, err := l.TryAcquire("k", 3)
		require.NoError(t, err)
		_, err = l.Acquire(context.Background(), "k", 3)
		require.NoError(t, err, "A")
		assert.Equal(t, t0.Add(300*time.Millisecond), time.Now(), "A")
		wg.Wait()
		assert.Equal(t, t0.Add(500*time.Millisecond), bAt, "B, behind A")
		assert.Equal(t, 400*time.Millisecond, retryAfter(t, alone), "a unit behind A's three")
		assert.Equal(t, 600*time.Millisecond, retryAfter(t, behindB), "a unit behind A's three and B's two")
		assert.Equal(t, keyed.Stats{Stats: permits.Stats{Granted: 3, Rejected: 2}, Keys: 1}, l.Stats())
	})
}

// W2: A has pinned its key and sent its request, and so has B after it,
// both in the inbox of an owner held at its clock reading: the fast path
// answers from what the key's entry carries, without a round trip.
func TestTryAcquireBehindAcquiresOnTheirWayCountsTheirUnits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &heldClock{}
		l := newLimiter(t, gcra10x3, keyed.WithShards(1), keyed.WithClock(clock))
		_, err := l.TryAcquire("k", 3)
		require.NoError(t, err)
		synctest.Wait() // the owner has seen the new key and sleeps
		release := make(chan struct{})
		clock.owner.Store(&release)
		var wg sync.WaitGroup
		var aAt, bAt time.Time
		acquire := func(cost int64, at *time.Time) {
			wg.Go(func() {
				_, err := l.Acquire(context.Background(), "k", cost)
				assert.NoError(t, err)
				*at = time.Now()
			})
			synctest.Wait()
		}
		acquire(3, &aAt) // A closes the gate, pins k, sends; the owner wakes and is held
		acquire(2, &bAt) // B is behind it, in the inbox
		answered := make(chan time.Duration)
		go func() {
			_, err := l.TryAcquire("k", 1)
			answered <- retryAfter(t, err)
		}()
		synctest.Wait()
		select {
		case wait := <-answered:
			assert.Equal(t, 600*time.Millisecond, wait, "a unit behind A's three and B's two")
		default:
			t.Fatal("the TryAcquire waited for the held owner")
		}
		assert.Equal(t, int64(5), keyed.UnitsOnTheirWay(l, "k"), "A's and B's")
		close(release)
		synctest.Wait() // both judged: queued, A until 300ms, B until 500ms
		assert.Equal(t, int64(0), keyed.UnitsOnTheirWay(l, "k"), "the owner took them off once judged")
		wg.Wait()
		assert.Equal(t, t0.Add(300*time.Millisecond), aAt, "A")
		assert.Equal(t, t0.Add(500*time.Millisecond), bAt, "B")
		assert.Equal(t, keyed.Stats{Stats: permits.Stats{Granted: 3, Rejected: 1}, Keys: 1}, l.Stats())
	})
}

// The owner's own answer, to a TryAcquire that reached it before the
// Acquire that closed the gate (it found the key pinned, not yet gated),
// counts that Acquire's units too.
func TestTheOwnersAnswerBehindAnAcquireOnItsWayCountsItsUnits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l *keyed.Limiter[string]
		var tryErr error
		l = newLimiter(t, gcra10x3, keyed.WithShards(1), keyed.WithClosedHook(func() {
			e := keyed.Entry(l, "k") // promoted: A pins it under the read lock next
			require.False(t, keyed.Pin(l, e))
			tryErr = keyed.SendPinned(l, e, 1)
		}))
		_, err := l.TryAcquire("k", 3)
		require.NoError(t, err)
		_, err = l.Acquire(context.Background(), "k", 3)
		require.NoError(t, err, "A")
		assert.Equal(t, t0.Add(300*time.Millisecond), time.Now(), "A")
		assert.Equal(t, 400*time.Millisecond, retryAfter(t, tryErr), "a unit behind A's three")
	})
}

// An Acquire held behind the closer that gives up takes its units off
// what a TryAcquire is told: B (2 units) leaves, C (1) stays, so a unit
// waits behind A's three and C's one, 500ms, not 700ms.
func TestTryAcquireBehindAnAcquireClosingTheGateForgetsOneThatGaveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l *keyed.Limiter[string]
		var wg sync.WaitGroup
		var tryErr error
		var cAt time.Time
		l = newLimiter(t, gcra10x3, keyed.WithShards(1), keyed.WithClosedHook(func() {
			ctx, cancel := context.WithCancel(context.Background())
			var b sync.WaitGroup
			b.Go(func() {
				_, err := l.Acquire(ctx, "k", 2)
				assert.ErrorIs(t, err, context.Canceled, "B")
			})
			synctest.Wait() // B is at the owner, held behind A
			wg.Go(func() {
				_, err := l.Acquire(context.Background(), "k", 1)
				assert.NoError(t, err, "C")
				cAt = time.Now()
			})
			synctest.Wait() // and C behind B
			cancel()
			b.Wait()
			_, tryErr = l.TryAcquire("k", 1)
		}))
		_, err := l.TryAcquire("k", 3)
		require.NoError(t, err)
		_, err = l.Acquire(context.Background(), "k", 3)
		require.NoError(t, err, "A")
		assert.Equal(t, t0.Add(300*time.Millisecond), time.Now(), "A")
		wg.Wait()
		assert.Equal(t, t0.Add(400*time.Millisecond), cAt, "C")
		assert.Equal(t, 500*time.Millisecond, retryAfter(t, tryErr), "a unit behind A's three and C's one: B left")
		assert.Equal(t, keyed.Stats{Stats: permits.Stats{Granted: 3, Rejected: 1, Canceled: 1}, Keys: 1}, l.Stats())
	})
}

// Behind a plain queue, an Acquire in the inbox of an owner that has not
// taken it yet is counted too, still without a round trip: A (3 units)
// waits at the owner until 300ms; B (2) is on its way, the owner held at
// its clock reading before it takes B. The owner's tail says 300ms, the
// earliest a newcomer's unit could come behind A; B's two units put it
// 200ms later (a newcomer's unit comes at 600ms: within one interval).
func TestTryAcquireBehindAQueueCountsTheAcquiresInTheInbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &heldClock{}
		l := newLimiter(t, gcra10x3, keyed.WithShards(1), keyed.WithClock(clock))
		_, err := l.TryAcquire("k", 3)
		require.NoError(t, err)
		var wg sync.WaitGroup
		var aAt, bAt time.Time
		acquire := func(cost int64, at *time.Time) {
			wg.Go(func() {
				_, err := l.Acquire(context.Background(), "k", cost)
				assert.NoError(t, err)
				*at = time.Now()
			})
			synctest.Wait()
		}
		acquire(3, &aAt) // A is queued at the owner, which sleeps until 300ms
		release := make(chan struct{})
		clock.owner.Store(&release)
		acquire(2, &bAt) // B is in the inbox; the owner, woken, is held
		answered := make(chan time.Duration)
		go func() {
			_, err := l.TryAcquire("k", 1)
			answered <- retryAfter(t, err)
		}()
		synctest.Wait()
		select {
		case wait := <-answered:
			assert.Equal(t, 500*time.Millisecond, wait, "behind A, and B's two units")
		default:
			t.Fatal("the TryAcquire waited for the held owner")
		}
		close(release)
		wg.Wait()
		assert.Equal(t, t0.Add(300*time.Millisecond), aAt, "A")
		assert.Equal(t, t0.Add(500*time.Millisecond), bAt, "B")
		assert.Equal(t, keyed.Stats{Stats: permits.Stats{Granted: 3, Rejected: 1}, Keys: 1}, l.Stats())
	})
}
