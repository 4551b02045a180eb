package redislimit_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
)

func TestADeadlineBeforeTheReservationFailsAtOnce(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "dl", algorithms.PerSecond(10), 1)
		begin := time.Now()
		_, err := l.TryAcquire(1)
		require.NoError(t, err)

		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err = l.Acquire(ctx, 1)
		var rl *permits.RateLimitError
		require.ErrorAs(t, err, &rl)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 100*time.Millisecond, rl.RetryAfter)
		assert.Zero(t, time.Since(begin), "refused at once, not when the deadline came")

		// Nothing was consumed: the next waiter gets the same instant.
		ctx2, cancel2 := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel2()
		_, err = l.Acquire(ctx2, 1)
		require.NoError(t, err)
		assert.Equal(t, 100*time.Millisecond, time.Since(begin))
		assert.Equal(t, uint64(1), l.Stats().Rejected)
	})
}

func TestWithMaxWaitRefusesLongReservations(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "mw", algorithms.PerSecond(10), 1, redislimit.WithMaxWait(150*time.Millisecond))
		for range 2 {
			_, err := l.Acquire(context.Background(), 1) // at 0 and 100 ms
			require.NoError(t, err)
		}
		_, err := l.TryAcquire(1)
		require.Error(t, err)
		p := l.Stats().Granted
		assert.Equal(t, uint64(2), p)
		// Now at 100 ms, the TAT at 200 ms: two more would wait 100 and 200 ms.
		ch := start(time.Now(), func() error { _, err := l.Acquire(context.Background(), 1); return err })
		synctest.Wait()
		_, err = l.Acquire(context.Background(), 1)
		var rl *permits.RateLimitError
		require.ErrorAs(t, err, &rl)
		assert.NotErrorIs(t, err, context.DeadlineExceeded, "WithMaxWait is not the caller's deadline")
		assert.Equal(t, 200*time.Millisecond, rl.RetryAfter)
		assert.NoError(t, (<-ch).err)
	})
}

func TestACancelledWaiterHandsItsSlotToTheNextAndTheLastIsGivenBack(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "hand", algorithms.PerSecond(10), 1)
		begin := time.Now()
		_, err := l.TryAcquire(1) // the burst, at 0
		require.NoError(t, err)
		ctxA, cancelA := context.WithCancel(context.Background())
		a := start(begin, func() error { _, err := l.Acquire(ctxA, 1); return err })
		synctest.Wait()
		b := start(begin, func() error { _, err := l.Acquire(context.Background(), 1); return err })
		synctest.Wait()
		cc := start(begin, func() error { _, err := l.Acquire(context.Background(), 1); return err })
		synctest.Wait() // reserved at 100, 200 and 300 ms
		w, _, _, _, _ := value(t, c, "hand")
		require.Equal(t, begin.Add(400*time.Millisecond).UnixMicro(), w)
		calls := l.Stats().Calls

		time.Sleep(50 * time.Millisecond)
		cancelA()
		assert.ErrorIs(t, (<-a).err, context.Canceled)
		gotB, gotC := <-b, <-cc
		require.NoError(t, gotB.err)
		require.NoError(t, gotC.err)
		assert.Equal(t, 100*time.Millisecond, gotB.at, "B took A's slot")
		assert.Equal(t, 200*time.Millisecond, gotC.at, "C took B's")

		st := l.Stats()
		assert.Equal(t, uint64(2), st.HandedOff)
		assert.Equal(t, uint64(1), st.GivenBack, "the last slot, which nobody here can use, went back")
		assert.Equal(t, calls+1, st.Calls, "one call: the give-back")
		w, _, _, _, _ = value(t, c, "hand")
		assert.Equal(t, begin.Add(300*time.Millisecond).UnixMicro(), w, "the TAT is as if A had never asked")
		assert.Equal(t, uint64(1), st.Canceled)
	})
}

func TestAHandOffNeedsTheSlotToCoverTheCost(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "cover", algorithms.PerSecond(10), 3)
		begin := time.Now()
		_, err := l.TryAcquire(3)
		require.NoError(t, err)
		ctxA, cancelA := context.WithCancel(context.Background())
		a := start(begin, func() error { _, err := l.Acquire(ctxA, 2); return err }) // reserved at 200 ms
		synctest.Wait()
		b := start(begin, func() error { _, err := l.Acquire(context.Background(), 3); return err }) // at 500 ms
		synctest.Wait()
		time.Sleep(10 * time.Millisecond)
		cancelA()
		<-a
		gotB := <-b
		require.NoError(t, gotB.err)
		assert.Equal(t, 500*time.Millisecond, gotB.at, "3 does not fit in A's 2: B keeps its own slot")
		st := l.Stats()
		assert.Zero(t, st.HandedOff)
		assert.Zero(t, st.GivenBack, "A's slot has an admission behind it: not provably safe to give back")
	})
}

func TestTwoSmallWaitersShareTheSlotOfALargeOne(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "share", algorithms.PerSecond(10), 2)
		begin := time.Now()
		_, err := l.TryAcquire(2)
		require.NoError(t, err)
		ctxA, cancelA := context.WithCancel(context.Background())
		a := start(begin, func() error { _, err := l.Acquire(ctxA, 2); return err }) // at 200 ms
		synctest.Wait()
		b := start(begin, func() error { _, err := l.Acquire(context.Background(), 1); return err }) // at 300 ms
		synctest.Wait()
		d := start(begin, func() error { _, err := l.Acquire(context.Background(), 1); return err }) // at 400 ms
		synctest.Wait()
		cancelA()
		<-a
		gotB, gotD := <-b, <-d
		require.NoError(t, gotB.err)
		require.NoError(t, gotD.err)
		assert.Equal(t, 200*time.Millisecond, gotB.at)
		assert.Equal(t, 200*time.Millisecond, gotD.at, "A's 2 units at 200 ms cover both")
		st := l.Stats()
		assert.Equal(t, uint64(2), st.HandedOff)
		assert.Equal(t, uint64(2), st.GivenBack, "B's and D's own slots went back")
		w, _, _, _, _ := value(t, c, "share")
		assert.Equal(t, begin.Add(400*time.Millisecond).UnixMicro(), w)
	})
}

func TestAWaiterCancelledWhileItsCallIsUnderWayHandsItsGrantOn(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		g := newGate()
		l := vlimiter(t, c, "inflight", algorithms.PerSecond(10), 1, redislimit.WithBeforeCall(g.hold))
		begin := time.Now()
		ctxA, cancelA := context.WithCancel(context.Background())
		a := start(begin, func() error { _, err := l.Acquire(ctxA, 1); return err })
		release := g.next() // A's call is about to be sent
		b := start(begin, func() error { _, err := l.Acquire(context.Background(), 1); return err })
		synctest.Wait()
		cancelA()
		assert.ErrorIs(t, (<-a).err, context.Canceled, "returns at once, while the call is held")
		close(release)
		gotB := <-b
		require.NoError(t, gotB.err)
		assert.Zero(t, gotB.at, "B got the grant A gave up, at once")
		st := l.Stats()
		assert.Equal(t, uint64(1), st.Decided, "B was never sent")
		assert.Equal(t, uint64(1), st.HandedOff)
	})
}

func TestAWaiterCancelledBeforeItIsSentCostsNothing(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		g := newGate()
		l := vlimiter(t, c, "unsent", algorithms.PerSecond(10), 1, redislimit.WithBeforeCall(g.hold))
		begin := time.Now()
		a := start(begin, func() error { _, err := l.Acquire(context.Background(), 1); return err })
		release := g.next()
		ctxB, cancelB := context.WithCancel(context.Background())
		b := start(begin, func() error { _, err := l.Acquire(ctxB, 1); return err })
		synctest.Wait()
		cancelB()
		assert.ErrorIs(t, (<-b).err, context.Canceled)
		close(release)
		require.NoError(t, (<-a).err)
		synctest.Wait()
		assert.Equal(t, uint64(1), l.Stats().Decided, "B never reached Redis")
		w, _, _, _, _ := value(t, c, "unsent")
		assert.Equal(t, begin.Add(100*time.Millisecond).UnixMicro(), w, "only A's unit is counted")
	})
}

func TestCloseFailsWaitersAndLaterCalls(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "close", algorithms.PerSecond(10), 1)
		begin := time.Now()
		_, err := l.TryAcquire(1)
		require.NoError(t, err)
		var waiters []<-chan outcome
		for range 3 {
			waiters = append(waiters, start(begin, func() error { _, err := l.Acquire(context.Background(), 1); return err }))
		}
		synctest.Wait()
		assert.Equal(t, 3, l.Stats().Waiting)
		require.NoError(t, l.Close())
		for _, w := range waiters {
			assert.ErrorIs(t, (<-w).err, permits.ErrClosed)
		}
		_, err = l.Acquire(context.Background(), 1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		_, err = l.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrClosed)
		require.NoError(t, l.Close(), "idempotent")
		assert.Equal(t, 0, l.Stats().Waiting)
	})
}

func TestCloseCancelsACallUnderWay(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		g := newGate()
		l := vlimiter(t, c, "closecall", algorithms.PerSecond(10), 1, redislimit.WithBeforeCall(g.hold))
		ctx, cancel := context.WithCancel(context.Background()) // through the owner, not direct
		defer cancel()
		a := start(time.Now(), func() error { _, err := l.Acquire(ctx, 1); return err })
		release := g.next()
		closed := make(chan struct{})
		go func() { l.Close(); close(closed) }()
		synctest.Wait()
		close(release)
		<-closed
		assert.ErrorIs(t, (<-a).err, permits.ErrClosed)
	})
}

func TestATryAcquireNeverWaitsForASlotSomeoneGaveUp(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "tryslot", algorithms.PerSecond(10), 1)
		other := vlimiter(t, c, "tryslot", algorithms.PerSecond(10), 1) // another process
		begin := time.Now()
		_, err := l.TryAcquire(1)
		require.NoError(t, err)
		ctxA, cancelA := context.WithCancel(context.Background())
		a := start(begin, func() error { _, err := l.Acquire(ctxA, 1); return err }) // at 100 ms
		synctest.Wait()
		o := start(begin, func() error { _, err := other.Acquire(context.Background(), 1); return err }) // at 200 ms
		synctest.Wait()
		time.Sleep(50 * time.Millisecond)
		cancelA() // its slot cannot go back: the other process was admitted behind it
		<-a
		synctest.Wait()
		assert.Zero(t, l.Stats().GivenBack)
		_, err = l.TryAcquire(1)
		var rl *permits.RateLimitError
		require.ErrorAs(t, err, &rl, "the free slot is 50 ms ahead: a TryAcquire does not wait for it")
		assert.Equal(t, 50*time.Millisecond, time.Since(begin), "answered at once")
		p, err := l.Acquire(context.Background(), 1)
		require.NoError(t, err)
		assert.Equal(t, int64(1), p.Cost())
		assert.Equal(t, 100*time.Millisecond, time.Since(begin), "an Acquire takes it")
		assert.Equal(t, uint64(1), l.Stats().HandedOff)
		require.NoError(t, (<-o).err)
	})
}

func TestALoneCallerThatCannotBeCancelledMakesTheCallItself(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		l := vlimiter(t, c, "direct", algorithms.PerSecond(10), 3)
		_, err := l.TryAcquire(1)
		require.NoError(t, err)
		_, err = l.Acquire(context.Background(), 1)
		require.NoError(t, err)
		assert.Equal(t, uint64(2), l.Stats().Direct, "no hand-off to the owner")

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err = l.Acquire(ctx, 1)
		require.NoError(t, err)
		assert.Equal(t, uint64(2), l.Stats().Direct, "a caller that can be cancelled goes through the owner")

		// A reservation made on the direct path is the owner's to grant.
		synctest.Wait() // the owner lets go of the state once it has nothing to do
		begin := time.Now()
		_, err = l.Acquire(context.Background(), 1)
		require.NoError(t, err)
		assert.Equal(t, 100*time.Millisecond, time.Since(begin))
		assert.Equal(t, uint64(3), l.Stats().Direct)
	})
}
