package redislimit_test

import (
	"context"
	"errors"
	"math"
	"regexp"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// These tests run on the real clock against a server they stop, restart,
// pause and flush: what they check is what the limiter answers in each
// fault, not how long it takes.

func newLimiter(t *testing.T, c redis.UniversalClient, key string, rate algorithms.Rate, burst int64, opts ...redislimit.Option) *redislimit.Limiter {
	t.Helper()
	l, err := redislimit.New(c, key, rate, burst, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

// calls returns how many times the server ran cmd (INFO commandstats).
func calls(t *testing.T, c *redis.Client, cmd string) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func TestRedisDownFailsClosedAndRecovers(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, noRetries)
	l := newLimiter(t, c, "down", algorithms.PerSecond(100), 10, redislimit.WithProbeInterval(0))
	ctx := context.Background()
	_, err := l.Acquire(ctx, 1)
	require.NoError(t, err)

	s.Kill()
	_, err = l.Acquire(ctx, 1)
	require.ErrorIs(t, err, redislimit.ErrUnavailable)
	var ue *redislimit.UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "down", ue.Key)
	assert.Error(t, ue.Cause, "the error wraps the cause")
	assert.NotErrorIs(t, err, permits.ErrRateLimited, "unavailable is not rate limited")
	_, err = l.TryAcquire(1)
	assert.ErrorIs(t, err, redislimit.ErrUnavailable)
	// Once the connection is gone, a refused dial is known not to have
	// reached Redis.
	assert.False(t, ue.Unknown && errors.Is(err, redislimit.ErrUnavailable) && isDial(err), "a refused dial is a known outcome")

	require.NoError(t, s.Restart())
	_, err = l.Acquire(ctx, 1)
	require.NoError(t, err, "the restarted server has lost the script: EVALSHA, NOSCRIPT, EVAL")
	st := l.Stats()
	assert.Equal(t, uint64(2), st.Unavailable)
	assert.Equal(t, uint64(2), st.Granted)
}

// noRetries makes a client fail at once when the server is down: go-redis
// retries a command (MaxRetries) and a dial (DialerRetries, 100ms apart)
// by default.
func noRetries(o *redis.Options) { o.MaxRetries, o.DialerRetries = -1, 1 }

func TestWhileRedisIsDownRequestsFailWithoutACallUntilTheProbe(t *testing.T) {
	s := redistest.Test(t)
	synctest.Test(t, func(t *testing.T) {
		c := s.NewClient(noRetries)
		t.Cleanup(func() { c.Close() })
		l := vlimiter(t, c, "probe", algorithms.PerSecond(100), 10, redislimit.WithProbeInterval(time.Second))
		_, err := l.TryAcquire(1)
		require.NoError(t, err)
		s.Kill()
		_, err = l.TryAcquire(1)
		require.ErrorIs(t, err, redislimit.ErrUnavailable)
		st0 := l.Stats()
		calls := st0.Calls
		for range 3 {
			_, err = l.Acquire(context.Background(), 1)
			require.ErrorIs(t, err, redislimit.ErrUnavailable)
			var ue *redislimit.UnavailableError
			require.ErrorAs(t, err, &ue)
			assert.False(t, ue.Unknown, "failed without a call: surely not applied")
		}
		assert.Equal(t, calls, l.Stats().Calls, "no call within the probe interval")
		// Each of them took the direct path's state, and made no call:
		// Stats.Direct counts the calls callers made.
		assert.Equal(t, st0.Direct, l.Stats().Direct, "no caller made a script call")
		time.Sleep(time.Second)
		_, err = l.TryAcquire(1)
		assert.ErrorIs(t, err, redislimit.ErrUnavailable)
		assert.Equal(t, calls+1, l.Stats().Calls, "after the interval, one call tries Redis again")
		assert.Equal(t, uint64(5), l.Stats().Unavailable)
	})
}

// A probe interval too long to add to the clock holds as the longest.
func TestAProbeIntervalOfCenturiesHolds(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, noRetries)
	l := newLimiter(t, c, "probe-long", algorithms.PerSecond(100), 10, redislimit.WithProbeInterval(math.MaxInt64))
	_, err := l.TryAcquire(1)
	require.NoError(t, err)
	s.Kill()
	_, err = l.TryAcquire(1)
	require.ErrorIs(t, err, redislimit.ErrUnavailable)
	calls := l.Stats().Calls
	_, err = l.Acquire(context.Background(), 1)
	require.ErrorIs(t, err, redislimit.ErrUnavailable)
	assert.Equal(t, calls, l.Stats().Calls, "no call within the probe interval")
}

func isDial(err error) bool {
	var ue *redislimit.UnavailableError
	return errors.As(err, &ue) && !ue.Unknown
}

func TestFailOpenUsesTheLocalShareWhileRedisIsDown(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, noRetries)
	// A quarter of 100/s, burst 8: 25/s, burst 2, in this process.
	l := newLimiter(t, c, "open", algorithms.PerSecond(100), 8, redislimit.WithFailOpen(1, 4), redislimit.WithProbeInterval(0))
	for range 8 {
		_, err := l.TryAcquire(1)
		require.NoError(t, err)
	}
	s.Kill()
	// A cost above the local share's burst is one Redis admits: it fails
	// as unavailable, not as a cost the limiter could never admit.
	_, err := l.TryAcquire(5)
	assert.ErrorIs(t, err, redislimit.ErrUnavailable)
	assert.NotErrorIs(t, err, permits.ErrCostExceedsCapacity)
	_, err = l.Acquire(context.Background(), 5)
	assert.ErrorIs(t, err, redislimit.ErrUnavailable)
	for range 2 {
		_, err := l.TryAcquire(1)
		require.NoError(t, err, "the local share's burst")
	}
	_, err = l.TryAcquire(1)
	var rl *permits.RateLimitError
	require.ErrorAs(t, err, &rl, "the local share is a limit too")
	assert.Greater(t, rl.RetryAfter, time.Duration(0))
	assert.LessOrEqual(t, rl.RetryAfter, 40*time.Millisecond, "one unit of 25/s")
	p, err := l.Acquire(context.Background(), 1)
	require.NoError(t, err, "Acquire waits on the local share")
	assert.Equal(t, int64(1), p.Cost())
	assert.Equal(t, uint64(6), l.Stats().FellOpen)

	require.NoError(t, s.Restart())
	_, err = l.TryAcquire(5)
	require.NoError(t, err)
	assert.Equal(t, uint64(6), l.Stats().FellOpen, "back on Redis")
}

func TestASlowRedisTimesOutAndTheCallCountsAsConsumed(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	admin := s.Client(t)
	ctx := context.Background()
	l := newLimiter(t, c, "slow", algorithms.PerSecond(1), 1, redislimit.WithCallTimeout(100*time.Millisecond), redislimit.WithProbeInterval(0))
	_, err := l.TryAcquire(1) // loads the script, spends the burst
	require.NoError(t, err)
	ctxB, cancelB := context.WithCancel(ctx)
	reserved := make(chan error)
	go func() { _, err := l.Acquire(ctxB, 1); reserved <- err }() // reserved a second ahead
	for l.Stats().Decided != 2 || l.Stats().Waiting != 1 {
		time.Sleep(time.Millisecond) // until Redis has reserved it
	}
	calls0 := l.Stats().Calls

	// Pause writes: the next call waits on the server, beyond the timeout.
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", 5000, "WRITE").Err())
	_, err = l.Acquire(ctx, 1)
	require.ErrorIs(t, err, redislimit.ErrUnavailable)
	var ue *redislimit.UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.True(t, ue.Unknown, "the call was sent: its outcome is unknown")
	var te *redislimit.TimeoutError
	assert.ErrorAs(t, err, &te)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "a slow Redis is not the caller's deadline")
	assert.Equal(t, calls0+1, l.Stats().Calls, "nothing was sent again on its behalf")

	// The lost call may have been admitted behind B's reservation: when B
	// gives up, its slot is not given back, as it would be otherwise.
	cancelB()
	assert.ErrorIs(t, <-reserved, context.Canceled)
	require.NoError(t, admin.Do(ctx, "CLIENT", "UNPAUSE").Err())
	for redislimit.CallsInside(l) != 0 {
		time.Sleep(time.Millisecond) // until go-redis gives the stuck call back: no call goes meanwhile
	}
	_, err = l.TryAcquire(1)
	var rl *permits.RateLimitError
	require.ErrorAs(t, err, &rl, "B's unit still counts")
	st := l.Stats()
	assert.Zero(t, st.GivenBack)
	assert.Equal(t, uint64(1), st.Unavailable)
}

func TestReservationsAreGrantedWhileRedisIsPaused(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	admin := s.Client(t)
	ctx := context.Background()
	l := newLimiter(t, c, "paused", algorithms.PerSecond(10), 1, redislimit.WithCallTimeout(3*time.Second))
	_, err := l.Acquire(ctx, 1)
	require.NoError(t, err)
	reserved := make(chan error)
	go func() { _, err := l.Acquire(ctx, 1); reserved <- err }() // reserved 100 ms ahead
	for l.Stats().Waiting != 1 || l.Stats().Decided != 2 {
		time.Sleep(time.Millisecond) // until Redis has reserved it
	}
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", 10000, "WRITE").Err())
	defer admin.Do(ctx, "CLIENT", "UNPAUSE")
	require.NoError(t, <-reserved, "granted on the owner's timer, without Redis")
	assert.Equal(t, uint64(2), l.Stats().Decided, "no call was needed")
}

func TestAConnectionDroppedMidCallFailsTheCallAsUnknown(t *testing.T) {
	s := redistest.Test(t)
	// Without go-redis's own retries: with them, the command is sent again
	// on a new connection (and may then run twice, which counts the costs
	// twice: never more admissions, only fewer).
	c := s.Client(t, func(o *redis.Options) { o.MaxRetries = -1 })
	admin := s.Client(t)
	ctx := context.Background()
	l := newLimiter(t, c, "drop", algorithms.PerSecond(10), 5, redislimit.WithCallTimeout(5*time.Second), redislimit.WithProbeInterval(0))
	_, err := l.Acquire(ctx, 1)
	require.NoError(t, err)
	calls0 := l.Stats().Calls
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", 10000, "WRITE").Err())
	done := make(chan error)
	go func() { _, err := l.Acquire(ctx, 1); done <- err }()
	for l.Stats().Calls != calls0+1 {
		time.Sleep(time.Millisecond) // until the call is under way
	}
	require.NoError(t, admin.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err())
	err = <-done
	require.NoError(t, admin.Do(ctx, "CLIENT", "UNPAUSE").Err())
	require.ErrorIs(t, err, redislimit.ErrUnavailable)
	var ue *redislimit.UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.True(t, ue.Unknown, "the command was sent before the connection dropped")
	_, err = l.Acquire(ctx, 1)
	assert.NoError(t, err, "a new connection")
}

func TestScriptFlushReloadsWithEval(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	admin := s.Client(t)
	ctx := context.Background()
	l := newLimiter(t, c, "flush", algorithms.PerSecond(1000), 100)
	_, err := l.Acquire(ctx, 1)
	require.NoError(t, err)
	evals := calls(t, admin, "eval")
	require.NoError(t, admin.ScriptFlush(ctx).Err())
	before := l.Stats().Calls
	_, err = l.Acquire(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, before+2, l.Stats().Calls, "EVALSHA met NOSCRIPT; EVAL ran the script and loaded it")
	assert.Equal(t, evals+1, calls(t, admin, "eval"))
	_, err = l.Acquire(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, before+3, l.Stats().Calls, "EVALSHA works again")
	assert.Equal(t, evals+1, calls(t, admin, "eval"))
}

func TestServerRestartMidRun(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	l := newLimiter(t, c, "restart", algorithms.PerSecond(2000), 20, redislimit.WithCallTimeout(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type tally struct{ granted, unavailable, other int }
	results := make(chan tally)
	for range 8 {
		go func() {
			var tl tally
			for ctx.Err() == nil {
				_, err := l.Acquire(ctx, 1)
				switch {
				case err == nil:
					tl.granted++
				case errors.Is(err, redislimit.ErrUnavailable):
					tl.unavailable++
				case ctx.Err() != nil:
				default:
					tl.other++
				}
			}
			results <- tl
		}()
	}
	for l.Stats().Granted < 200 {
		time.Sleep(time.Millisecond)
	}
	s.Kill()
	for l.Stats().Unavailable < 8 {
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, s.Restart())
	g := l.Stats().Granted
	for l.Stats().Granted < g+200 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	var sum tally
	for range 8 {
		tl := <-results
		sum.granted += tl.granted
		sum.unavailable += tl.unavailable
		sum.other += tl.other
	}
	assert.Zero(t, sum.other)
	assert.Positive(t, sum.unavailable)
	assert.Greater(t, sum.granted, 400)
	t.Logf("granted %d, unavailable %d", sum.granted, sum.unavailable)
}

// A lone caller's slow call (the direct path) fails with a TimeoutError,
// and counts as consumed, at its deadline, though go-redis waits for Redis
// as long as it takes: a worker makes the call, and the caller waits for
// the answer or the deadline. While that call is stuck, the next caller
// fails at once without a call of its own; once it is back, calls go again.
func TestALoneCallersSlowCallTimesOutAtItsDeadline(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t, patient)
	admin := s.Client(t)
	ctx := context.Background()
	const timeout = 150 * time.Millisecond
	l := newLimiter(t, c, "lone-slow", algorithms.PerSecond(1000), 100, redislimit.WithCallTimeout(timeout), redislimit.WithProbeInterval(0))
	_, err := l.TryAcquire(1)
	require.NoError(t, err)

	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", pauseMs, "WRITE").Err())
	defer admin.Do(ctx, "CLIENT", "UNPAUSE")
	begin := time.Now()
	_, err = l.TryAcquire(1)
	var te *redislimit.TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Less(t, time.Since(begin), waitedForRedis, "the caller waited for Redis, not WithCallTimeout")
	var ue *redislimit.UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.True(t, ue.Unknown, "the call was sent")
	st := l.Stats()
	assert.Equal(t, uint64(2), st.Direct)
	assert.Equal(t, uint64(1), st.Unavailable)
	require.Equal(t, 1, redislimit.CallsInside(l), "the call is still inside go-redis")

	_, err = l.Acquire(ctx, 1)
	require.ErrorAs(t, err, &ue, "a stuck call makes the next fail at once")
	assert.False(t, ue.Unknown, "without a call")
	assert.ErrorAs(t, err, &te)
	assert.Equal(t, st.Calls, l.Stats().Calls, "no call queued behind the stuck one")

	require.NoError(t, admin.Do(ctx, "CLIENT", "UNPAUSE").Err())
	for redislimit.CallsInside(l) != 0 {
		time.Sleep(time.Millisecond) // until go-redis gives the stuck call back
	}
	_, err = l.TryAcquire(1)
	require.NoError(t, err, "calls go again")
	assert.Equal(t, uint64(3), l.Stats().Direct)
}

// With maxmemory-policy noeviction a full Redis refuses the script's
// write: the requests fail closed, with a known outcome, and the key keeps
// what it held (docs/distributed.md, lost state).
func TestAFullRedisWithNoevictionFailsClosed(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	ctx := context.Background()
	l := newLimiter(t, c, "full", algorithms.PerSecond(10), 10, redislimit.WithProbeInterval(0))
	_, err := l.TryAcquire(1)
	require.NoError(t, err)
	w0, f0, n0, _, ok := value(t, c, "full")
	require.True(t, ok)
	require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1").Err())
	_, err = l.TryAcquire(1)
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
	var ue *redislimit.UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.False(t, ue.Unknown, "the write was refused: nothing was applied")
	assert.ErrorContains(t, err, "OOM")
	w, f, n, _, ok := value(t, c, "full")
	require.True(t, ok, "not evicted")
	assert.Equal(t, [3]int64{w0, f0, n0}, [3]int64{w, f, n}, "unchanged")
	_, err = l.TryAcquire(1)
	assert.NoError(t, err, "admits again once Redis has room")
}
