package keyed_test

import (
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyed"
)

func gcraPerKey(string) (algorithms.Algorithm, error) {
	return algorithms.NewGCRA(algorithms.PerSecond(10), 5)
}

// A pass that drops keys writes one line, at Debug, with the count: ten
// keys full again at 100ms make one line, the last key at 500ms another.
func TestLoggerTellsEachPassThatEvicted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, logger := testutil.NewLogs()
		t0 := time.Now()
		l := newLimiter(t, gcraPerKey, keyed.WithShards(1), keyed.WithName("ips"), keyed.WithLogger(logger))
		for i := range 10 {
			_, err := l.TryAcquire(fmt.Sprint("k", i), 1)
			require.NoError(t, err)
		}
		_, err := l.TryAcquire("slow", 5)
		require.NoError(t, err)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, 0, l.Stats().Keys)
		lines := logs.Lines(t)
		require.Len(t, lines, 2)
		want := func(at time.Duration, evicted, live int) map[string]any {
			return map[string]any{
				"time": t0.Add(at).Format(time.RFC3339Nano), "level": "DEBUG", "msg": "sluice: keyed evicted idle keys",
				"sluice.limiter.name": "ips", "sluice.shard": float64(0),
				"keys_evicted": float64(evicted), "keys_live": float64(live),
			}
		}
		assert.Equal(t, want(100*time.Millisecond, 10, 1), lines[0])
		assert.Equal(t, want(500*time.Millisecond, 1, 0), lines[1])
	})
}

// Requests write nothing: a thousand on a key kept busy, and the only line
// is the one that drops it once they stop.
func TestLoggerWritesNoLineForRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, logger := testutil.NewLogs()
		l := newLimiter(t, gcraPerKey, keyed.WithShards(1), keyed.WithLogger(logger))
		for range 1000 {
			_, _ = l.TryAcquire("k", 1)
			time.Sleep(time.Millisecond)
		}
		assert.Empty(t, logs.Messages(t), "a key in use is never dropped")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"sluice: keyed evicted idle keys"}, logs.Messages(t))
	})
}

// A handler that does not take Debug gets nothing.
func TestLoggerAboveDebugWritesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs, logger := testutil.NewLogsAt(slog.LevelInfo)
		l := newLimiter(t, gcraPerKey, keyed.WithShards(1), keyed.WithLogger(logger))
		_, err := l.TryAcquire("k", 1)
		require.NoError(t, err)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, 0, l.Stats().Keys)
		assert.Empty(t, logs.Messages(t))
	})
}
