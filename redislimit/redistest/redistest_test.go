package redistest_test

import (
	"context"
	"os"
	"testing"

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
