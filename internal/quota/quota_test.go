package quota_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/quota"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWindowIsTheTimeToRefillTheCapacity(t *testing.T) {
	g, err := algorithms.NewGCRA(algorithms.PerMinute(100), 100)
	require.NoError(t, err)
	assert.Equal(t, time.Minute, quota.Window(g))
	tb, err := algorithms.NewTokenBucket(algorithms.PerSecond(3), 2) // 2/3 s, rounded up
	require.NoError(t, err)
	assert.Equal(t, 666666667*time.Nanosecond, quota.Window(tb))
	sw, err := algorithms.NewSlidingWindow(algorithms.PerMinute(10))
	require.NoError(t, err)
	assert.Equal(t, time.Minute, quota.Window(sw), "a window refills in its length")
}

func TestOfAGrantAndARefusal(t *testing.T) {
	g, err := algorithms.NewGCRA(algorithms.PerMinute(100), 100)
	require.NoError(t, err)
	t0 := time.Unix(1000, 0)
	d := g.AllowAt(t0, 50)
	q := quota.Of(g, d, t0)
	assert.Equal(t, int64(100), q.Limit)
	assert.Equal(t, int64(50), q.Remaining)
	assert.Equal(t, 30*time.Second, q.Reset)
	assert.Zero(t, q.RetryAfter)
	assert.Equal(t, time.Minute, q.Window)

	d = g.AllowAt(t0, 60) // 10 short: 6 s until they are back
	q = quota.Of(g, d, t0)
	assert.False(t, d.Allowed)
	assert.Equal(t, int64(50), q.Remaining)
	assert.Equal(t, 6*time.Second, q.RetryAfter)
	assert.Equal(t, 30*time.Second, q.Reset)

	b := quota.Behind(g, 2*time.Second)
	assert.Equal(t, int64(0), b.Remaining)
	assert.Equal(t, 2*time.Second, b.RetryAfter)
	assert.Equal(t, 2*time.Second, b.Reset)
}

func TestOfAWindowSaysWhenItsNextUnitComesBack(t *testing.T) {
	sw, err := algorithms.NewSlidingWindow(algorithms.PerMinute(4))
	require.NoError(t, err)
	t0 := time.Unix(1200, 0)
	sw.AllowAt(t0, 1)
	now := t0.Add(10 * time.Second)
	q := quota.Of(sw, sw.AllowAt(now, 1), now)
	assert.Equal(t, 50*time.Second, q.Next, "the admission of t0 leaves at t0+60s")
	assert.Equal(t, time.Minute, q.Reset)

	g, err := algorithms.NewGCRA(algorithms.PerMinute(4), 4)
	require.NoError(t, err)
	assert.Zero(t, quota.Of(g, g.AllowAt(t0, 1), t0).Next, "a steady rate: the server computes it")
}
