package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// Each granted Acquire tells the observer how long its caller waited, the
// round trip to Redis included; TryAcquire is not reported. On a real
// server, so only the floor of a wait is checked: the second of two
// Acquires on a burst of one at 10/s waits its turn, at least 100 ms less
// the clocks' grain.
func TestEachGrantedRedisAcquireTellsTheObserverItsWait(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	var lh, kh permits.WaitHistogram
	l := newLimiter(t, c, "obs:l", algorithms.PerSecond(10), 1, redislimit.WithObserver(&lh))
	k, err := redislimit.NewKeyed(c, "obs:k:", algorithms.PerSecond(10), 1, redislimit.WithObserver(&kh))
	require.NoError(t, err)
	t.Cleanup(func() { k.Close() })
	for range 2 {
		_, err := l.Acquire(context.Background(), 1)
		require.NoError(t, err)
	}
	for range 2 {
		_, err = k.Acquire(context.Background(), "a", 1)
		require.NoError(t, err)
	}
	_, _ = l.TryAcquire(1)
	_, _ = k.TryAcquire("a", 1)
	for name, h := range map[string]*permits.WaitHistogram{"Limiter": &lh, "Keyed": &kh} {
		got := h.Snapshot()
		assert.Equal(t, uint64(2), got.Count, name)
		assert.GreaterOrEqual(t, got.Sum, 90*time.Millisecond, "%s: the second waited its turn", name)
	}
}
