package redislimit_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// These tests are of the direct path's hand-overs (direct.go): most on
// the real clock against a paused server, when its call is stuck.

// hookClock is package time, running a hook once, on the next Now.
type hookClock struct{ hook atomic.Pointer[func()] }

func (c *hookClock) Now() time.Time {
	if f := c.hook.Swap(nil); f != nil {
		(*f)()
	}
	return time.Now()
}

func (c *hookClock) NewTimer(d time.Duration) actor.Timer { return timer{time.NewTimer(d)} }

// A request pushed after a lone caller took the state, and before the
// caller's round took the inbox, goes in that caller's call; its caller's
// push woke the owner before the call had a deadline to keep. The owner is
// woken again once it has one: WithCallTimeout bounds the request.
func TestARequestTakenIntoADirectCallKeepsItsCallTimeout(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, patient)
	admin := s.Client(t)
	ctx := context.Background()
	clk := &hookClock{}
	const timeout = 150 * time.Millisecond
	w, err := redislimit.NewWindow(c, "direct-queued", algorithms.PerSecond(1000),
		redislimit.WithCallTimeout(timeout), redislimit.WithProbeInterval(0), redislimit.WithClock(clk))
	require.NoError(t, err)
	defer w.Close()
	_, err = w.TryAcquire(1) // loads the script
	require.NoError(t, err)
	st0 := w.Stats()

	// Paused far longer than any wait the test allows, so that a caller
	// that waited for Redis instead of WithCallTimeout cannot pass on any
	// machine, however slow, and one that kept its timeout passes on any.
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", pauseMs, "WRITE").Err())
	defer admin.Do(ctx, "CLIENT", "UNPAUSE")
	begin := time.Now()
	second := make(chan error, 1)
	var took atomic.Int64
	hook := func() {
		// On the first caller's goroutine, which holds the state and has
		// not yet taken the inbox.
		go func() {
			_, err := w.Acquire(ctx, 1) // finds the state held, and pushes
			took.Store(int64(time.Since(begin)))
			second <- err
		}()
		for w.Stats().Waiting == 0 {
			time.Sleep(time.Millisecond) // counted just before its push
		}
		time.Sleep(5 * time.Millisecond) // pushed, and the owner woken and back asleep
	}
	clk.hook.Store(&hook)
	first := make(chan error, 1)
	go func() { _, err := w.TryAcquire(1); first <- err }()

	var te *redislimit.TimeoutError
	require.ErrorAs(t, <-second, &te)
	st := w.Stats()
	assert.Equal(t, st0.Calls+1, st.Calls, "the second request went in the first caller's call")
	assert.Equal(t, st0.Decided+2, st.Decided)
	assert.Less(t, time.Duration(took.Load()), waitedForRedis, "the second caller waited for Redis, not WithCallTimeout")
	require.NoError(t, admin.Do(ctx, "CLIENT", "UNPAUSE").Err())
	require.ErrorAs(t, <-first, &te)
}

// A lone call that timed out is still inside go-redis while the next lone
// call is made: the next must not write into arguments the stuck call may
// still read (with WithServerClock, whose instant goes in them). Run with
// -race.
func TestALoneCallDoesNotShareArgumentsWithAStuckOne(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	admin := s.Client(t)
	ctx := context.Background()
	l := newLimiter(t, c, "lone-args", algorithms.PerSecond(1000), 100,
		redislimit.WithServerClock(func() int64 { return time.Now().UnixMicro() }),
		redislimit.WithCallTimeout(100*time.Millisecond), redislimit.WithProbeInterval(0))
	_, err := l.TryAcquire(1)
	require.NoError(t, err)

	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", 800, "WRITE").Err())
	defer admin.Do(ctx, "CLIENT", "UNPAUSE")
	first := make(chan error, 1)
	go func() { _, err := l.TryAcquire(1); first <- err }() // lone, stuck
	for l.Stats().Direct != 2 {
		time.Sleep(time.Millisecond)
	}
	// Wake the owner, which then keeps the stuck call's deadline, and give
	// up before the owner takes the request in: it makes no call.
	ctx2, cancel2 := context.WithCancel(ctx)
	c2 := make(chan error, 1)
	go func() { _, err := l.Acquire(ctx2, 1); c2 <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel2()
	require.ErrorIs(t, <-c2, context.Canceled)
	for l.Stats().Unavailable != 1 {
		time.Sleep(time.Millisecond) // the owner timed the stuck call out
	}
	_, err = l.TryAcquire(1) // lone again, the same cost, while the stuck call is in go-redis
	var te *redislimit.TimeoutError
	require.ErrorAs(t, err, &te)
	require.NoError(t, admin.Do(ctx, "CLIENT", "UNPAUSE").Err())
	require.ErrorAs(t, <-first, &te)
}

// A key an earlier release wrote as text "W:F:N:M" keeps its state: a
// Limiter decides on it as it stands (refusing what its TAT leaves no room
// for, granting what it does) and its next write stores it packed.
func TestALimiterKeepsTheStateOfAKeyWrittenAsText(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	ctx := context.Background()
	now := time.Now().UnixMicro()
	tat := now + (59 * time.Minute).Microseconds() // 1/min, burst 60: room for one
	require.NoError(t, c.Set(ctx, "text", fmt.Sprintf("%d:0:7:%d", tat, tat), time.Hour).Err())
	l := newLimiter(t, c, "text", algorithms.PerMinute(1), 60)
	_, err := l.TryAcquire(2)
	var rl *permits.RateLimitError
	require.ErrorAs(t, err, &rl, "a cost of 2 does not fit")
	assert.InDelta(t, time.Minute, rl.RetryAfter, float64(time.Second))
	_, err = l.TryAcquire(1)
	require.NoError(t, err)
	w, _, n, _, ok := value(t, c, "text")
	require.True(t, ok, "stored packed")
	assert.Equal(t, tat+time.Minute.Microseconds(), w)
	assert.Equal(t, int64(8), n)
}

// spareSlots leaves l's owner idle (tok free) with two slots nobody holds,
// due at 300 and 400 ms after begin, that cannot be given back because
// another process (l2) wrote the key since: rate 10/s, burst 1. It returns
// at 250 ms. The waiters it used are done.
func spareSlots(t *testing.T, l, l2 *redislimit.Limiter) (begin time.Time) {
	begin = time.Now()
	_, err := l.TryAcquire(1) // the burst, at 0
	require.NoError(t, err)
	var cancels [4]context.CancelFunc
	var outs [4]<-chan outcome
	for i := range 4 { // reserved at 100, 200, 300, 400 ms
		ctx, cancel := context.WithCancel(context.Background())
		cancels[i] = cancel
		outs[i] = start(begin, func() error { _, err := l.Acquire(ctx, 1); return err })
		synctest.Wait()
	}
	other := start(begin, func() error { _, err := l2.Acquire(context.Background(), 1); return err }) // 500 ms, writes the key
	synctest.Wait()
	cancels[3]() // its slot is trailing, but the give-back finds the key written
	synctest.Wait()
	cancels[2]()
	synctest.Wait()
	for i := range 2 {
		o := <-outs[i]
		require.NoError(t, o.err)
	}
	for i := 2; i < 4; i++ {
		assert.Error(t, (<-outs[i]).err)
	}
	time.Sleep(250*time.Millisecond - time.Since(begin))
	synctest.Wait()
	t.Cleanup(func() { <-other })
	return begin
}

// A waiter that takes a reservation in a lone caller's round on the direct
// path is granted at its slot's instant even while the script call that
// round makes (for a third request) is slow: a slow Redis never delays a
// grant already reserved. The round leaves its call to a worker and arms
// the owner's timer, as the owner's own round does.
func TestAReservedGrantIsNotDelayedByADirectCall(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		var holding atomic.Bool
		g := newGate()
		clk := &hookClock{}
		l := vlimiter(t, c, "spare", algorithms.PerSecond(10), 1, redislimit.WithClock(clk),
			redislimit.WithBeforeCall(func() {
				if holding.Load() {
					g.hold()
				}
			}))
		l2 := vlimiter(t, c, "spare", algorithms.PerSecond(10), 1)
		begin := spareSlots(t, l, l2)
		st0 := l.Stats()

		var y, x <-chan outcome
		hook := func() {
			// On the lone caller's goroutine, holding the state, before its
			// round takes the inbox.
			y = start(begin, func() error { _, err := l.Acquire(context.Background(), 1); return err })
			for l.Stats().Waiting < 2 {
				runtime.Gosched()
			}
			x = start(begin, func() error { _, err := l.Acquire(context.Background(), 1); return err })
			for l.Stats().Waiting < 3 {
				runtime.Gosched()
			}
		}
		holding.Store(true)
		clk.hook.Store(&hook)
		cOut := start(begin, func() error { _, err := l.Acquire(context.Background(), 1); return err })
		call := g.next() // the call for x, made by the lone caller's round: held (a slow Redis)
		require.NotNil(t, x, "y and x came while the lone caller held the state")
		assert.Equal(t, st0.Direct, l.Stats().Direct, "the round left its call to a worker")

		time.Sleep(450*time.Millisecond - time.Since(begin))
		synctest.Wait()
		select {
		case o := <-y:
			assert.NoError(t, o.err)
			assert.Equal(t, 400*time.Millisecond, o.at, "granted at its slot")
			y = nil
		default:
			t.Errorf("at %v the waiter holding the slot due at 400ms is not yet granted: it waits for the direct caller's call", time.Since(begin))
		}
		holding.Store(false)
		close(call)
		o := <-cOut
		assert.NoError(t, o.err)
		t.Logf("the direct caller, holding the slot due at 300ms, was granted at %v", o.at)
		if y != nil {
			o := <-y
			t.Logf("the waiter holding the slot due at 400ms was granted at %v (%v)", o.at, o.err)
		}
		<-x
	})
}
