package redistest_test

import (
	"context"
	"net"
	"os"
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
