package actor_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
)

// A pause writes two lines, its start and its end, whatever extends it;
// a waiter queued behind it is granted at its end.
func TestLoggerTellsAPauseStartAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, logger := testutil.NewLogs()
		t0 := time.Now()
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithName("api"), actor.WithLogger(logger))
		defer l.Close()
		require.NoError(t, l.Pause(t0.Add(2*time.Second)))
		time.Sleep(time.Second)
		require.NoError(t, l.Pause(t0.Add(3*time.Second))) // extends it: no line
		require.NoError(t, l.Pause(t0.Add(time.Second)))   // already past: no line
		_, err := l.Acquire(context.Background(), 1)
		require.NoError(t, err)
		assert.Equal(t, 3*time.Second, time.Since(t0), "granted at the pause's end")
		lines := logs.Lines(t)
		require.Len(t, lines, 2)
		assert.Equal(t, map[string]any{
			"time": t0.Format(time.RFC3339Nano), "level": "INFO", "msg": "sluice: limiter paused",
			"sluice.limiter.name": "api", "until": t0.Add(2 * time.Second).Format(time.RFC3339Nano),
			"retry_after": float64(2 * time.Second),
		}, lines[0])
		assert.Equal(t, map[string]any{
			"time": t0.Add(3 * time.Second).Format(time.RFC3339Nano), "level": "INFO", "msg": "sluice: limiter resumed",
			"sluice.limiter.name": "api", "paused_for": float64(3 * time.Second),
		}, lines[1])
	})
}

// The end of a pause is told even when nothing waits for it: the owner
// wakes at its end to reopen the lock-free paths. A second pause, after,
// is told as a new one.
func TestLoggerTellsAPauseEndWithNobodyWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, logger := testutil.NewLogs()
		t0 := time.Now()
		l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithLogger(logger))
		defer l.Close()
		require.NoError(t, l.Pause(t0.Add(time.Second)))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.NoError(t, l.Pause(t0.Add(3*time.Second)))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"sluice: limiter paused", "sluice: limiter resumed",
			"sluice: limiter paused", "sluice: limiter resumed"}, logs.Messages(t))
		lines := logs.Lines(t)
		assert.Equal(t, "unnamed", lines[0]["sluice.limiter.name"])
		assert.Equal(t, t0.Add(time.Second).Format(time.RFC3339Nano), lines[1]["time"])
		assert.Equal(t, float64(time.Second), lines[3]["paused_for"])
	})
}

// SetRate and SetBurst write a line each when they change something, none
// when they fail.
func TestLoggerTellsRateAndBurstChanges(t *testing.T) {
	logs, logger := testutil.NewLogs()
	l := actor.MustNew(gcra(t, algorithms.PerSecond(10), 1), actor.WithName("api"), actor.WithLogger(logger))
	defer l.Close()
	require.NoError(t, l.SetRate(algorithms.PerMinute(600)))
	require.NoError(t, l.SetBurst(5))
	require.Error(t, l.SetBurst(0))
	require.Error(t, l.SetRate(algorithms.Rate{}))
	lines := logs.Lines(t)
	require.Len(t, lines, 2)
	assert.Equal(t, "sluice: limiter rate changed", lines[0]["msg"])
	assert.Equal(t, "600/m", lines[0]["rate"])
	assert.Equal(t, "api", lines[0]["sluice.limiter.name"])
	assert.Equal(t, "sluice: limiter burst changed", lines[1]["msg"])
	assert.Equal(t, float64(5), lines[1]["burst"])
}

// Requests write nothing: a thousand of them, granted at once, queued and
// refused, and no line.
func TestLoggerWritesNoLineForRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, logger := testutil.NewLogs()
		l := actor.MustNew(gcra(t, algorithms.PerSecond(1000), 10), actor.WithLogger(logger))
		defer l.Close()
		for range 1000 {
			_, _ = l.Acquire(context.Background(), 1)
			_, _ = l.TryAcquire(1)
			_ = l.Allow()
		}
		assert.Empty(t, logs.Messages(t))
	})
}
