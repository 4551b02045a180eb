package keyed_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// aheadClock reads package time plus an offset the test moves: an injected
// clock that runs ahead of the real one.
type aheadClock struct{ ahead atomic.Int64 }

func (c *aheadClock) Now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }
func (c *aheadClock) NewTimer(d time.Duration) keyed.Timer {
	return timer{time.NewTimer(d)}
}

type timer struct{ *time.Timer }

func (t timer) C() <-chan time.Time { return t.Timer.C }

// WithClock's clock is the one keys are decided by: moving it on refills a
// key while no real time passes.
func TestWithClockDecidesByTheInjectedClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &aheadClock{}
		l := newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 1), keyed.WithClock(clock))
		_, err := l.TryAcquire("a", 1)
		require.NoError(t, err)
		_, err = l.TryAcquire("a", 1)
		wait, limited := permits.RetryAfter(err)
		require.True(t, limited, "the key is empty: %v", err)
		assert.Equal(t, 100*time.Millisecond, wait)
		clock.ahead.Store(int64(100 * time.Millisecond))
		_, err = l.TryAcquire("a", 1)
		assert.NoError(t, err, "refilled by the injected clock, with no real time gone by")
	})
}

// Every shard's owner runs under pprof labels naming the limiter and the
// shard, so that a goroutine dump of a limiter nobody closed says which it is.
func TestWithNameLabelsEveryShardsOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		newLimiter(t, gcraPer[string](algorithms.PerSecond(10), 1), keyed.WithName("per-ip"), keyed.WithShards(2))
		synctest.Wait() // the owners have started and parked
		labels := testutil.GoroutineLabels()
		assert.Contains(t, labels, `{"sluice.limiter":"per-ip", "sluice.shard":"0"}`)
		assert.Contains(t, labels, `{"sluice.limiter":"per-ip", "sluice.shard":"1"}`)
	})
}
