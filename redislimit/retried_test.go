package redislimit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// go-redis sends a command again when its connection drops before the
// reply (MaxRetries, 3 by default), so a script call whose reply is lost
// runs twice. A give-back applied by the first run must not be reported
// as refused by the second, or the limiter deals again the room Redis
// gave away. The proxy cuts every third script call's reply while callers
// with short deadlines leave reservations behind to give back; the grants,
// at the instants Redis admitted them, stay within burst + rate·d in every
// window, and in total within burst + rate·elapsed by Redis TIME.
func TestTheBoundHoldsWhenScriptRepliesAreCutAndRetried(t *testing.T) {
	const (
		perSec  = 200
		burst   = 2
		callers = 48
		run     = 1500 * time.Millisecond
	)
	s := redistest.Test(t)
	p := s.Proxy(t)
	c := redis.NewClient(&redis.Options{Addr: p.Addr}) // go-redis's retries
	t.Cleanup(func() { c.Close() })
	admin := s.Client(t)
	ctx := context.Background()
	var log grantLog
	l, err := redislimit.New(c, "retried", algorithms.PerSecond(perSec), burst, redislimit.WithProbeInterval(0), log.hook())
	require.NoError(t, err)
	_, err = l.TryAcquire(1) // loads the script before the cuts
	require.NoError(t, err)
	cutEveryThirdCall(p)

	t0, err := admin.Time(ctx).Result()
	require.NoError(t, err)
	other := givingUp(ctx, callers, run, 26, func(ctx context.Context) error {
		_, err := l.Acquire(ctx, 1)
		return err
	})
	require.NoError(t, l.Close())
	t1, err := admin.Time(ctx).Result()
	require.NoError(t, err)

	st := l.Stats()
	require.Positive(t, p.Cuts(), "replies were cut")
	require.Positive(t, st.GivenBack, "reservations were given back")
	assert.Zero(t, other, "no error but a cancellation or Redis unavailable")
	grants := log.sorted()
	excess := 0
	for i := range grants {
		for j := i; j < len(grants); j++ {
			d := grants[j] - grants[i] + 1
			if int64(j-i+1) > burst+d*perSec/1_000_000 {
				excess++
			}
		}
	}
	bound := burst + int64(t1.Sub(t0))*perSec/int64(time.Second)
	t.Logf("%d grants (bound %d by Redis TIME), %d replies cut, %d units given back, %d calls, windows above the bound: %d",
		len(grants), bound, p.Cuts(), st.GivenBack, st.Calls, excess)
	assert.Zero(t, excess, "no window above burst + rate·d")
	assert.LessOrEqual(t, int64(len(grants)), bound, "granted ≤ burst + rate·elapsed")
}

// The batch script run twice with the same call id, as go-redis's retry
// runs it, answers the first run's reply and changes nothing; a call with
// another id decides afresh.
func TestAGiveBackSentTwiceIsAppliedOnce(t *testing.T) {
	c := redistest.Test(t).Client(t)
	ctx := context.Background()
	const t0 = int64(1_796_083_200_000_000)
	// 10 units a second (P = 100 000 µs, C = 1), burst 5 (tau 500 000 µs).
	eval := func(at int64, give string, gw int64, extra ...any) string {
		t.Helper()
		args := append([]any{100_000, 1, 500_000, 0, at, give, gw, 0, "1:-1:3", ""}, extra...)
		keys := []string{"twice"}
		if len(extra) > 0 {
			keys = append(keys, "{twice}:replay")
		}
		v, err := c.Eval(ctx, redislimit.Script, keys, args...).Text()
		require.NoError(t, err)
		return v
	}
	first := eval(t0, "", 0)
	value := first[len(first)-32:]
	// Give the three back, and take three again, at once.
	gave := eval(t0+1, value[:24], 300_000, "7", 10_000)
	assert.Equal(t, int64(1), floats(t, gave[8:16])[0], "the give-back applied")
	after, err := c.Get(ctx, "twice").Result()
	require.NoError(t, err)

	again := eval(t0+1, value[:24], 300_000, "7", 10_000)
	assert.Equal(t, gave, again, "the same reply, given back")
	now, err := c.Get(ctx, "twice").Result()
	require.NoError(t, err)
	assert.Equal(t, after, now, "and nothing changed")

	other := eval(t0+1, value[:24], 300_000, "8", 10_000)
	assert.Equal(t, int64(0), floats(t, other[8:16])[0], "another call finds the value changed")
	ttl, err := c.PTTL(ctx, "{twice}:replay").Result()
	require.NoError(t, err)
	assert.InDelta(t, 10*time.Second, ttl, float64(time.Second), "kept for ARGV[11] ms")
}

// The window script run twice with the same call id, as go-redis's retry
// runs it, answers the first run's reply and changes nothing: a
// settlement the first run applied is not reported as settled before.
func TestAWindowSettlementSentTwiceIsAppliedOnce(t *testing.T) {
	c := redistest.Test(t).Client(t)
	ctx := context.Background()
	const t0 = int64(1_796_083_200_000_000)
	// A limit of 10 in a window of 1 s.
	eval := func(at int64, settles, reqs string, extra ...any) []any {
		t.Helper()
		args := append([]any{10, 1_000_000, at, settles, reqs, "", 0}, extra...)
		keys := []string{"wtwice"}
		if len(extra) > 0 {
			keys = append(keys, "{wtwice}:replay")
		}
		v, err := c.Eval(ctx, redislimit.WindowScript, keys, args...).Slice()
		require.NoError(t, err)
		return v
	}
	first := eval(t0, "", "10:-1")
	epoch, id := first[1].(int64), first[2].(int64)
	settle := fmt.Sprintf("%d:%d:4:1", epoch, id) // used 4 of the 10
	settled := eval(t0+1, settle, "6:0", "7", 10_000)
	assert.Equal(t, int64(1), settled[4], "the settlement applied")
	assert.Equal(t, t0+1, settled[5], "and the 6 it gave back admitted")
	after, err := c.HGetAll(ctx, "wtwice").Result()
	require.NoError(t, err)

	again := eval(t0+1, settle, "6:0", "7", 10_000)
	assert.Equal(t, settled, again, "the same reply, given back")
	now, err := c.HGetAll(ctx, "wtwice").Result()
	require.NoError(t, err)
	assert.Equal(t, after, now, "and nothing changed")

	other := eval(t0+1, settle, "1:0", "8", 10_000)
	assert.Equal(t, int64(0), other[4], "another call finds it settled before")
	assert.Less(t, other[5].(int64), int64(0), "and the window full")
}

// The bound of a Window under the same faults: callers that give up leave
// reservations that go back with the next call, the proxy cuts every
// third script call's reply and go-redis runs the call again; the grants,
// at the instants Redis admitted them, never hold more than the limit in
// any window. (What pins the replay itself is the script-level test
// above: this run keeps the bound even without it, since its give-backs
// reported gone only leave room unused.)
func TestAWindowsBoundHoldsWhenScriptRepliesAreCutAndRetried(t *testing.T) {
	const (
		limit   = 10
		window  = 200 * time.Millisecond
		callers = 32
		run     = 1500 * time.Millisecond
	)
	s := redistest.Test(t)
	p := s.Proxy(t)
	c := redis.NewClient(&redis.Options{Addr: p.Addr}) // go-redis's retries
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	var log grantLog
	w, err := redislimit.NewWindow(c, "wretried", algorithms.Rate{Count: limit, Per: window}, redislimit.WithProbeInterval(0), log.hook())
	require.NoError(t, err)
	_, err = w.TryAcquire(1) // loads the script before the cuts
	require.NoError(t, err)
	cutEveryThirdCall(p)

	other := givingUp(ctx, callers, run, 27, func(ctx context.Context) error {
		_, err := w.Acquire(ctx, 1)
		return err
	})
	require.NoError(t, w.Close())

	st := w.Stats()
	require.Positive(t, p.Cuts(), "replies were cut")
	require.Positive(t, st.GivenBack, "reservations were given back")
	assert.Zero(t, other, "no error but a cancellation or Redis unavailable")
	grants := log.sorted()
	worst, j := 0, 0
	for i := range grants {
		for grants[i]-grants[j] >= window.Microseconds() {
			j++
		}
		worst = max(worst, i-j+1)
	}
	t.Logf("%d grants, %d replies cut, %d units given back, %d calls, most in one window: %d (limit %d)",
		len(grants), p.Cuts(), st.GivenBack, st.Calls, worst, limit)
	assert.LessOrEqual(t, worst, limit, "no window holds more than the limit")
}

// givingUp runs callers that acquire in a loop for run, each giving up
// after 5 to 105 ms (cancelled rather than given a deadline: Redis
// reserves for it however far ahead, and its caller then gives up), and
// returns how many errors were neither that nor Redis unavailable.
func givingUp(ctx context.Context, callers int, run time.Duration, seed uint64, acquire func(context.Context) error) int64 {
	runCtx, cancel := context.WithTimeout(ctx, run)
	defer cancel()
	var wg sync.WaitGroup
	var other atomic.Int64
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), seed))
			for runCtx.Err() == nil {
				cctx, stop := context.WithCancel(runCtx)
				tm := time.AfterFunc(time.Duration(5+rng.IntN(100))*time.Millisecond, stop)
				err := acquire(cctx)
				tm.Stop()
				stop()
				if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, redislimit.ErrUnavailable) {
					other.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return other.Load()
}

// grantLog keeps the instants at which Redis admitted a limiter's grants.
type grantLog struct {
	mu sync.Mutex
	at []int64
}

func (g *grantLog) hook() redislimit.Option {
	return redislimit.WithGrantHook(func(at, _ int64) {
		g.mu.Lock()
		g.at = append(g.at, at)
		g.mu.Unlock()
	})
}

// sorted returns the instants in order; the limiter must be closed.
func (g *grantLog) sorted() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	sort.Slice(g.at, func(i, j int) bool { return g.at[i] < g.at[j] })
	return g.at
}

// cutEveryThirdCall makes p cut the reply of every third script call.
func cutEveryThirdCall(p *redistest.Proxy) {
	var n atomic.Int64
	p.CutReplies(func(cmd []byte) bool {
		return bytes.Contains(cmd, []byte("evalsha")) && n.Add(1)%3 == 0
	})
}
