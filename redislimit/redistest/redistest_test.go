package redistest_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/redislimit/redistest"
)

func TestServerStartsKillsAndRestarts(t *testing.T) {
	dir := t.TempDir()
	s, err := redistest.Start(dir)
	if err == redistest.ErrNotFound && os.Getenv("CI") == "" {
		t.Skip("redis-server not found")
	}
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	c := s.Client(t)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())

	s.Kill()
	assert.Error(t, c.Ping(ctx).Err(), "a killed server answers nothing")
	require.NoError(t, s.Restart())
	require.NoError(t, c.Ping(ctx).Err(), "the same address serves again")
	assert.Equal(t, int64(0), c.Exists(ctx, "k").Val(), "without persistence a restart loses every key")

	s.Close()
	s.Close()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "the server leaves no files behind")
}

func TestTwoServersGetTwoPorts(t *testing.T) {
	a, b := redistest.Test(t), redistest.Test(t)
	assert.NotEqual(t, a.Addr, b.Addr)
}

func TestAStoppedServerAnswersOnlyOnceContinued(t *testing.T) {
	s := redistest.Test(t)
	t.Cleanup(s.Continue)
	ctx := context.Background()
	c := s.Client(t, func(o *redis.Options) { o.ReadTimeout, o.MaxRetries = 50*time.Millisecond, -1 })
	require.NoError(t, c.Ping(ctx).Err())
	s.Stop()
	err := c.Ping(ctx).Err()
	var ne net.Error
	require.ErrorAs(t, err, &ne, "a stopped server answers nothing")
	assert.True(t, ne.Timeout())
	s.Continue()
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 10*time.Second, time.Millisecond, "a continued server answers again")
}

func TestAProxyCutsAReplyAfterTheCommandRan(t *testing.T) {
	s := redistest.Test(t)
	p := s.Proxy(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
	defer c.Close()
	admin := s.Client(t)
	require.NoError(t, c.Set(ctx, "k", "1", 0).Err(), "forwarded both ways")
	p.CutReplies(func(cmd []byte) bool { return bytes.Contains(cmd, []byte("incr")) })
	assert.Error(t, c.Incr(ctx, "k").Err(), "the reply was cut")
	assert.Equal(t, 1, p.Cuts())
	assert.Equal(t, "2", admin.Get(ctx, "k").Val(), "the command ran")

	retrying := redis.NewClient(&redis.Options{Addr: p.Addr}) // MaxRetries 3
	defer retrying.Close()
	var once atomic.Bool
	p.CutReplies(func(cmd []byte) bool { return bytes.Contains(cmd, []byte("incr")) && once.CompareAndSwap(false, true) })
	require.NoError(t, retrying.Incr(ctx, "k").Err(), "go-redis sent it again")
	assert.Equal(t, "4", admin.Get(ctx, "k").Val(), "and it ran twice")
	p.CutReplies(nil)
	require.NoError(t, retrying.Incr(ctx, "k").Err())
	assert.Equal(t, 2, p.Cuts())
}

func TestAProxyDropsACommandBeforeItRuns(t *testing.T) {
	s := redistest.Test(t)
	p := s.Proxy(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
	defer c.Close()
	admin := s.Client(t)
	require.NoError(t, c.Set(ctx, "k", "1", 0).Err())
	p.DropCommands(func(cmd []byte) bool { return bytes.Contains(cmd, []byte("incr")) })
	assert.Error(t, c.Incr(ctx, "k").Err(), "the connection was cut")
	assert.Equal(t, "1", admin.Get(ctx, "k").Val(), "the command never ran")
	assert.Equal(t, redistest.Faults{Dropped: 1}, p.Faults())

	retrying := redis.NewClient(&redis.Options{Addr: p.Addr}) // MaxRetries 3
	defer retrying.Close()
	p.DropCommands(redistest.AtRate(1, 1, func(cmd []byte) bool { return bytes.Contains(cmd, []byte("incr")) }))
	assert.Error(t, retrying.Incr(ctx, "k").Err(), "every attempt dropped")
	assert.Equal(t, 1+4, p.Faults().Dropped, "the first attempt and its three retries")
	p.DropCommands(nil)
	require.NoError(t, retrying.Incr(ctx, "k").Err())
	assert.Equal(t, "2", admin.Get(ctx, "k").Val(), "only the last one ran")
	assert.Equal(t, 5, p.Faults().Total())
}

func TestAProxyHoldsAReplyForItsDelay(t *testing.T) {
	s := redistest.Test(t)
	p := s.Proxy(t)
	ctx := context.Background()
	impatient := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1, ReadTimeout: 50 * time.Millisecond})
	defer impatient.Close()
	admin := s.Client(t)
	p.DelayReplies(func(cmd []byte) time.Duration {
		if bytes.Contains(cmd, []byte("incr")) {
			return time.Hour
		}
		return 0
	})
	assert.Error(t, impatient.Incr(ctx, "k").Err(), "no reply within the read timeout")
	assert.Equal(t, "1", admin.Get(ctx, "k").Val(), "the command ran")

	const d = 20 * time.Millisecond
	p.DelayReplies(func([]byte) time.Duration { return d })
	c := redis.NewClient(&redis.Options{Addr: p.Addr})
	defer c.Close()
	t0 := time.Now()
	require.NoError(t, c.Incr(ctx, "k").Err(), "the reply comes, late")
	assert.GreaterOrEqual(t, time.Since(t0), d, "no sooner than its delay")
	p.DelayReplies(nil)
	require.NoError(t, c.Incr(ctx, "k").Err())
	assert.Equal(t, "3", admin.Get(ctx, "k").Val())
	f := p.Faults()
	assert.GreaterOrEqual(t, f.Delayed, 2, "the held reply and the late one (and the new connection's HELLO)")
	assert.Zero(t, f.Cut+f.Dropped)
}

func TestAtRateChoosesAboutItsShare(t *testing.T) {
	f := redistest.AtRate(0.25, 7, func(cmd []byte) bool { return bytes.HasPrefix(cmd, []byte("x")) })
	n := 0
	for range 4000 {
		if f([]byte("x")) {
			n++
		}
		assert.False(t, f([]byte("y")), "only what match accepts")
	}
	assert.InDelta(t, 1000, n, 150, "a quarter of 4,000")
}
