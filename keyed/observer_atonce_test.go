package keyed_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// An observer that counts the Acquires granted at once itself is not told
// of each: the shards count them on the fast path (in Stats too), Waited
// hears only of the Acquire the owner granted, and Close stops the count
// once.
func TestAnAtOnceObserverReadsTheKeysFastPathGrants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := new(testutil.AtOnceObserver)
		l, err := keyed.New(gcra10, keyed.WithObserver(o))
		require.NoError(t, err)
		defer l.Close()
		for _, k := range []string{"a", "b", "c"} {
			_, err := l.Acquire(context.Background(), k, 1)
			require.NoError(t, err)
		}
		_, err = l.TryAcquire("a", 1) // not an Acquire: counted in Stats only
		require.NoError(t, err)
		_, err = l.Acquire(context.Background(), "a", 1) // waits for a's next unit
		require.NoError(t, err)
		require.NotNil(t, o.Read)
		assert.Equal(t, uint64(3), o.Read())
		assert.Equal(t, int64(1), o.Waits.Load(), "told only of the wait")
		assert.Equal(t, uint64(5), l.Stats().Granted)
		l.Close()
		l.Close()
		assert.Equal(t, int32(1), o.Stops.Load())
	})
}

// With a WaitHistogram the counts read and told add up, and stay once the
// limiter is closed.
func TestAWaitHistogramKeepsAClosedKeyedLimitersAtOnceGrants(t *testing.T) {
	var h permits.WaitHistogram
	l, err := keyed.New(gcra10, keyed.WithObserver(&h))
	require.NoError(t, err)
	defer l.Close()
	for i := range 50 {
		_, err := l.Acquire(context.Background(), fmt.Sprint("user", i), 1)
		require.NoError(t, err)
	}
	l.Close()
	s := h.Snapshot()
	assert.Equal(t, uint64(50), s.Count)
	assert.Equal(t, uint64(50), s.Counts[0])
}
