package actor_test

import (
	"context"
	"strings"
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

// These tests pin the order of one wake-up (docs/semantics.md): heads that
// fell due before arrivals, arrivals judged from their own arrival, and a
// head promoted by a cancellation scheduled from the cancellation.

// While paused with nobody queued, an Acquire whose deadline (or
// WithMaxWait) ends before the pause does is refused at once, with the
// pause in its RetryAfter; it does not wait for the pause to end.
func TestAnAcquireThatCannotOutwaitAPauseIsRefusedAtOnce(t *testing.T) {
	for _, bound := range []string{"deadline", "WithMaxWait", "lane deadline", "lane WithMaxWait"} {
		t.Run(bound, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				var opts []actor.Option
				ctx := context.Background()
				if strings.HasSuffix(bound, "WithMaxWait") {
					opts = append(opts, actor.WithMaxWait(time.Second))
				} else {
					var stop context.CancelFunc
					ctx, stop = context.WithTimeout(ctx, time.Second)
					defer stop()
				}
				l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 5), opts...)
				defer l.Close()
				acquire := l.Acquire
				if strings.HasPrefix(bound, "lane") {
					ln, err := l.Lane("a", 1)
					require.NoError(t, err)
					acquire = ln.Acquire
				}
				require.NoError(t, l.Pause(t0.Add(5*time.Second)))
				_, err := acquire(ctx, 1)
				require.ErrorIs(t, err, permits.ErrRateLimited)
				assert.Equal(t, time.Duration(0), time.Since(t0), "refused at once")
				wait, _ := permits.RetryAfter(err)
				assert.Equal(t, 5*time.Second, wait, "the pause is the wait")
			})
		})
	}
}

// WithMaxWait is counted from the caller's arrival, not from the moment a
// late owner reads its clock: a caller that arrived at 10ms behind a queue,
// taken by an owner stalled until 50ms, with its grant predicted at 200ms,
// would wait 190ms, more than its 150ms.
func TestMaxWaitIsCountedFromTheArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &ownerStallClock{stall: 40 * time.Millisecond}
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithClock(clock), actor.WithMaxWait(150*time.Millisecond))
		defer l.Close()
		require.True(t, l.Allow())
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = l.Acquire(context.Background(), 1) }) // W, granted at 100ms
		synctest.Wait()
		time.Sleep(10 * time.Millisecond)
		clock.armed.Store(true)
		_, err := l.Acquire(context.Background(), 1)
		require.ErrorIs(t, err, permits.ErrRateLimited, "a grant at 200ms is 190ms after the arrival")
		wg.Wait()
	})
}

// A head promoted by a cancellation is due from the cancellation, not from
// the later moment the owner handled it: W (due at 100ms) gives up at 50ms
// and the owner, stalled, reads its clock at 130ms; N, behind W, is
// granted at 100ms (delivered at 130ms), not at 130ms.
func TestAPromotedHeadIsDueFromTheCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		clock := &ownerStallClock{stall: 80 * time.Millisecond}
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithClock(clock))
		defer l.Close()
		require.True(t, l.Allow()) // next unit at 100ms
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = l.Acquire(ctx, 1) }) // W
		synctest.Wait()
		var g permits.Grant
		var nAt time.Duration
		wg.Go(func() { g, _ = l.AcquireGrant(context.Background(), 1); nAt = time.Since(t0) }) // N
		synctest.Wait()
		time.Sleep(50 * time.Millisecond)
		clock.armed.Store(true)
		cancel()
		wg.Wait()
		assert.Equal(t, 100*time.Millisecond, g.At.Sub(t0), "scheduled from the cancellation")
		assert.Equal(t, 130*time.Millisecond, nAt, "delivered when the owner is free")
	})
}

// A late owner grants the heads that fell due before it judges the
// arrivals it finds with them: with every wake-up 120ms late, a lane's
// head due at 100ms is granted at 100ms (its instant), and an arrival in
// another lane does not pass it; MaxQueue does not count the due head.
func TestALateOwnerGrantsDueHeadsBeforeArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithClock(lateClock{120 * time.Millisecond}), actor.WithMaxQueue(1))
		defer l.Close()
		a, err := l.Lane("a", 1)
		require.NoError(t, err)
		b, err := l.Lane("b", 1)
		require.NoError(t, err)
		require.True(t, a.Allow()) // next unit at 100ms
		var wg sync.WaitGroup
		var ga, gb permits.Grant
		var bErr error
		wg.Go(func() { ga, _ = a.AcquireGrant(context.Background(), 1) })
		synctest.Wait()
		time.Sleep(200 * time.Millisecond) // the owner sleeps on to 220ms
		wg.Go(func() { gb, bErr = b.AcquireGrant(context.Background(), 1) })
		wg.Wait()
		require.NoError(t, bErr, "the due head is not counted against MaxQueue")
		assert.Equal(t, 100*time.Millisecond, ga.At.Sub(t0), "the head at its due instant")
		assert.Equal(t, 200*time.Millisecond, gb.At.Sub(t0), "the arrival after it")
	})
}

// A request whose cancellation reaches a late owner in its own batch is
// judged first, in its order, and cancelled after: one that was due
// before its caller gave up is granted, not withdrawn. Behind W (due at
// 100ms), A and B arrive at 10ms; the owner, woken by its timer at 100ms,
// stalls until 400ms; A gives up at 250ms. A's turn came at 200ms, before
// it gave up: it has the grant, and B the next, at 300ms. Before, A was
// withdrawn undecided and B took its 200ms.
func TestARequestDueBeforeItsCallerGaveUpIsGrantedByALateOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		clock := &ownerStallClock{stall: 300 * time.Millisecond}
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithClock(clock))
		defer l.Close()
		require.True(t, l.Allow())
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = l.Acquire(context.Background(), 1) }) // W
		synctest.Wait()
		time.Sleep(10 * time.Millisecond)
		clock.armed.Store(true) // the owner's next reading, at its 100ms timer, stalls
		ctx, cancel := context.WithCancel(context.Background())
		var a, b permits.Grant
		var aErr, bErr error
		wg.Go(func() { a, aErr = l.AcquireGrant(ctx, 1) })
		synctest.Wait()
		wg.Go(func() { b, bErr = l.AcquireGrant(context.Background(), 1) })
		synctest.Wait()
		time.Sleep(240 * time.Millisecond) // 250ms: the owner is still stalled
		cancel()
		wg.Wait()
		require.NoError(t, aErr, "A's turn came before it gave up")
		assert.Equal(t, 200*time.Millisecond, a.At.Sub(t0))
		require.NoError(t, bErr)
		assert.Equal(t, 300*time.Millisecond, b.At.Sub(t0))
	})
}
