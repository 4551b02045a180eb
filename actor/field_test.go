package actor_test

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

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// The regression tests of issue 9, "exact in the field": each reproduces a
// defect found by trying the limiter as a demanding user would, with a slow
// owner, refunds, late timers and clocks that misbehave.

// slowGCRA is a GCRA whose AllowAt takes stall (of virtual time, under
// synctest) when it decides at the instant at: a remote algorithm, a GC
// pause. Its other faces are the GCRA's own, so the fast path and the
// predictions keep working.
type slowGCRA struct {
	*algorithms.GCRA
	at    time.Time
	stall time.Duration
	done  atomic.Bool
}

func (s *slowGCRA) AllowAt(now time.Time, cost int64) algorithms.Decision {
	if now.Equal(s.at) && !s.done.Swap(true) {
		time.Sleep(s.stall)
	}
	return s.GCRA.AllowAt(now, cost)
}

// When a decision is slow, the waiters that fell due meanwhile are granted
// as soon as the owner is free again, and the next timer is armed from a
// fresh reading of the clock. Before: with GCRA 10/s burst 1 and 20 queued
// waiters, a 250ms stall in the grant at t0+500ms delivered the waiters due
// at 600, 700 and 800ms all at 850ms.
func TestSlowDecisionDelaysGrantsOnlyUntilTheOwnerIsFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		alg := &slowGCRA{GCRA: gcra(t, algorithms.PerSecond(10), 1), at: t0.Add(500 * time.Millisecond), stall: 250 * time.Millisecond}
		l := actor.MustNew(alg)
		defer l.Close()
		require.True(t, l.Allow())
		var mu sync.Mutex
		delivered := map[int]time.Duration{}
		scheduled := map[int]time.Duration{}
		var wg sync.WaitGroup
		for k := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g, err := l.AcquireGrant(context.Background(), 1)
				assert.NoError(t, err)
				mu.Lock()
				delivered[k], scheduled[k] = time.Since(t0), g.At.Sub(t0)
				mu.Unlock()
			}()
			synctest.Wait() // arrival order is k's order
		}
		wg.Wait()
		for k := range 20 {
			due := time.Duration(k+1) * 100 * time.Millisecond
			want := due
			if due >= 500*time.Millisecond {
				want = max(due, 750*time.Millisecond) // the owner is free again after the stall
			}
			assert.Equal(t, due, scheduled[k], "waiter %d: scheduled instant", k)
			assert.Equal(t, want, delivered[k], "waiter %d (due at %v): delivered", k, due)
		}
	})
}

// ownerStallClock reads package time, but the owner's first reading after
// arm is called sleeps for stall first: a scheduler that descheduled the
// owner between two steps.
type ownerStallClock struct {
	armed atomic.Bool
	stall time.Duration
}

func (c *ownerStallClock) Now() time.Time {
	if c.armed.Load() && inOwner() && c.armed.CompareAndSwap(true, false) {
		time.Sleep(c.stall)
	}
	return time.Now()
}

func (c *ownerStallClock) NewTimer(d time.Duration) actor.Timer { return lateClock{}.NewTimer(d) }

// inOwner reports whether the calling goroutine is a limiter's owner.
func inOwner() bool {
	buf := make([]byte, 4096)
	return bytes.Contains(buf[:runtime.Stack(buf, false)], []byte("internal/owner.(*Owner[...]).run("))
}

// An arrival the owner has not decided yet is never passed by the fast
// path, even when the queue has just emptied and capacity is back. Before,
// an Acquire that joined while the owner granted the last waiter sat in the
// late stack while the fast path reopened, and a TryAcquire succeeded while
// Stats().Waiting said 1.
func TestFastPathNeverPassesAnArrivalTheOwnerHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		clock := &ownerStallClock{stall: 100 * time.Millisecond}
		alg := &slowGCRA{GCRA: gcra(t, algorithms.PerSecond(10), 1), at: t0.Add(100 * time.Millisecond), stall: 30 * time.Millisecond}
		l := actor.MustNew(alg, actor.WithClock(clock))
		defer l.Close()
		require.True(t, l.Allow()) // TAT t0+100ms
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); assert.NoError(t, l.Wait(context.Background())) }() // the head, due at 100ms
		synctest.Wait()
		var late error
		go func() {
			defer wg.Done()
			time.Sleep(110 * time.Millisecond) // while the head's grant is slow
			clock.armed.Store(true)            // and the owner's next reading will be late
			late = l.Wait(context.Background())
		}()
		time.Sleep(200 * time.Millisecond) // the head is granted; the late arrival is due now
		assert.Equal(t, 1, l.Stats().Waiting, "the late arrival waits")
		_, err := l.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "TryAcquire passed an arrival the owner holds")
		wg.Wait()
		assert.NoError(t, late)
	})
}

// Every arrival has one order, whatever path it takes. Before, a plain
// Acquire that joined a busy queue through the late stack was queued ahead
// of an Acquire with a deadline sent before it, and the deadline then
// failed at once although its fair place met it.
func TestArrivalsKeepOneOrderWhateverPathTheyTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		alg := &slowGCRA{GCRA: gcra(t, algorithms.PerSecond(10), 1), at: t0.Add(100 * time.Millisecond), stall: 50 * time.Millisecond}
		l := actor.MustNew(alg)
		defer l.Close()
		require.True(t, l.Allow())
		var wg sync.WaitGroup
		wg.Add(3)
		go func() { defer wg.Done(); assert.NoError(t, l.Wait(context.Background())) }() // due at 100ms
		synctest.Wait()
		var first, second time.Duration
		go func() { // during the stall, with a deadline its place (200ms) meets
			defer wg.Done()
			time.Sleep(120 * time.Millisecond)
			ctx, cancel := context.WithDeadline(context.Background(), t0.Add(200*time.Millisecond))
			defer cancel()
			g, err := l.AcquireGrant(ctx, 1)
			if assert.NoError(t, err, "its fair place met the deadline") {
				first = g.At.Sub(t0)
			}
		}()
		go func() { // later, a plain one
			defer wg.Done()
			time.Sleep(130 * time.Millisecond)
			g, err := l.AcquireGrant(context.Background(), 1)
			if assert.NoError(t, err) {
				second = g.At.Sub(t0)
			}
		}()
		wg.Wait()
		assert.Equal(t, 200*time.Millisecond, first)
		assert.Equal(t, 300*time.Millisecond, second)
	})
}

// A late arrival keeps its own arrival instant: when timers are late, the
// waiters that arrived at the rate are still scheduled from their arrival.
// Before, one that joined a busy queue was stamped with the owner's next
// wake-up, which lowered the rate: at 1000/s with timers 30ms late, 100
// waiters arriving 1ms apart behind one other took 155ms instead of about
// 124.
func TestLateArrivalsKeepTheirOwnArrivalInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := actor.MustNew(gcra(t, algorithms.PerSecond(1000), 1), actor.WithClock(lateClock{30 * time.Millisecond}))
		defer l.Close()
		t0 := time.Now()
		require.True(t, l.Allow()) // the next unit is due at 1ms
		var wg sync.WaitGroup
		at := make([]time.Duration, 101)
		for k := range 101 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(k) * time.Millisecond)
				g, err := l.AcquireGrant(context.Background(), 1)
				assert.NoError(t, err)
				at[k] = g.At.Sub(t0)
			}()
		}
		wg.Wait()
		for k := range 101 {
			assert.Equal(t, time.Duration(k+1)*time.Millisecond, at[k], "waiter %d, arrived at %dms: scheduled", k, k)
		}
		assert.LessOrEqual(t, time.Since(t0), 101*time.Millisecond+30*time.Millisecond, "within one lateness")
	})
}

// noCloner hides every optional face of an algorithm: what a remote
// algorithm looks like, which cannot predict grants.
type noCloner struct{ inner algorithms.Algorithm }

func (n noCloner) AllowAt(now time.Time, cost int64) algorithms.Decision {
	return n.inner.AllowAt(now, cost)
}
func (n noCloner) Capacity() int64 { return n.inner.Capacity() }

// WithMaxWait and deadlines hold when the algorithm cannot predict: a wait
// that even the head's cannot meet is refused at once, and a waiter whose
// WithMaxWait runs out while queued is refused then. TryAcquire behind such
// a queue says at least the head's wait. Before, both bounds were silently
// not enforced behind a queue, and TryAcquire said 1ns.
func TestBoundsHoldWhenTheAlgorithmCannotPredict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := actor.MustNew(noCloner{gcra(t, algorithms.PerSecond(10), 1)}, actor.WithMaxWait(250*time.Millisecond))
		defer l.Close()
		require.True(t, l.Allow())
		g := newGrants()
		var wg sync.WaitGroup
		queue(t, &wg, l, g, nil, 1, 1) // due at 100ms and 200ms

		_, err := l.TryAcquire(1)
		var rl *permits.RateLimitError
		require.ErrorAs(t, err, &rl)
		assert.GreaterOrEqual(t, rl.RetryAfter, 100*time.Millisecond, "at least the head's wait")

		// A third waiter would be granted at 300ms: more than 250ms away.
		// Nobody can tell at once, but the owner refuses it when its wait
		// runs out, before the grant it could not have had in time.
		_, err = l.Acquire(context.Background(), 1)
		require.ErrorAs(t, err, &rl)
		assert.Equal(t, t0.Add(250*time.Millisecond), time.Now(), "refused when its wait ran out")
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
		wg.Wait()
		assert.Equal(t, []int{0, 1}, g.granted())

		// A deadline earlier than even the head's grant fails at once.
		queue(t, &wg, l, g, nil, 1) // due at 300ms (now is 250ms)
		ctx, cancel := context.WithDeadline(context.Background(), t0.Add(280*time.Millisecond))
		defer cancel()
		_, err = l.Acquire(ctx, 1)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Equal(t, t0.Add(250*time.Millisecond), time.Now(), "at once")
		wg.Wait()
	})
}

// backClock reads package time less back, which the test sets after New: an
// injected clock that goes back.
type backClock struct{ back atomic.Int64 }

func (c *backClock) Now() time.Time { return time.Now().Add(-time.Duration(c.back.Load())) }
func (c *backClock) NewTimer(d time.Duration) actor.Timer {
	return lateClock{}.NewTimer(d)
}

// A clock that reads earlier than it did at New is time standing still,
// not a reason to strand a waiter. Before, 0 meant both "no timer" and the
// start of the timeline, and the waiter was never granted.
func TestAClockThatGoesBackStrandsNobody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &backClock{}
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithClock(clock))
		defer l.Close()
		require.True(t, l.Allow())
		clock.back.Store(int64(time.Second)) // now reads a second before New
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		require.NoError(t, l.Wait(ctx), "granted once the clock is past the grant again")
		assert.Equal(t, 1100*time.Millisecond, time.Since(start))
	})
}

// Refunds never let the grants that were used go over the bound, even on a
// limiter that other callers share. Before, permits.All refunded the whole
// of a rate grant taken before a wait elsewhere: at 10/s with burst 1, a
// caller's unit at t0+100ms and All's retaken unit at t0+150ms were used
// 50ms apart.
func TestAllOnASharedRateKeepsItsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		requests := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1))
		defer requests.Close()
		tokens := actor.MustNew(tokenBucket(t, algorithms.PerSecond(1000), 150))
		defer tokens.Close()
		_, err := tokens.TryAcquire(150) // 150 tokens back at t0+150ms
		require.NoError(t, err)
		lim := permits.All(permits.FixedCost(requests, 1), tokens)

		var other time.Duration
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // shares the request rate
			defer wg.Done()
			time.Sleep(100 * time.Millisecond)
			assert.NoError(t, requests.Wait(context.Background()))
			other = time.Since(t0)
		}()
		p, err := lim.Acquire(context.Background(), 150)
		require.NoError(t, err)
		used := time.Since(t0)
		p.Release()
		wg.Wait()
		gap := used - other
		assert.GreaterOrEqual(t, max(gap, -gap), 100*time.Millisecond, "two request units used %v and %v apart", other, used)
	})
}

// A Grant refunds once, and only on the limiter that made it. Before, a
// second Refund of one Grant, or a Grant from another limiter, gave
// capacity back again.
func TestRefundOfAGrantTwiceOrOnAnotherLimiterChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := actor.MustNew(gcra(t, algorithms.PerSecond(1), 2))
		defer a.Close()
		b := actor.MustNew(gcra(t, algorithms.PerSecond(1), 2))
		defer b.Close()
		g, err := a.AcquireGrant(context.Background(), 1)
		require.NoError(t, err)
		_, err = a.AcquireGrant(context.Background(), 1)
		require.NoError(t, err)
		_, err = b.TryAcquire(2)
		require.NoError(t, err)

		assert.False(t, b.Refund(g), "a grant of another limiter")
		_, err = b.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "b gave nothing back")

		assert.True(t, a.Refund(g))
		assert.False(t, a.Refund(g), "refunded twice")
		_, err = a.TryAcquire(1)
		assert.NoError(t, err, "one unit back")
		_, err = a.TryAcquire(1)
		assert.ErrorIs(t, err, permits.ErrRateLimited, "and only one")
	})
}
