package actor_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

// burst acquires n permits and ends them all with o, at one instant, and
// lets the owner drain them.
func burst(t *testing.T, p *actor.AdaptivePool, n int, o actor.Outcome) {
	held := make([]permits.Permit, n)
	for i := range held {
		pm, err := p.TryAcquire(1)
		require.NoError(t, err)
		held[i] = pm
	}
	for _, pm := range held {
		p.Done(pm, o)
	}
	time.Sleep(10 * time.Millisecond)
}

func TestAdaptiveBusyPoolSamplesLatencyButEveryLoadSignal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newAdaptive(t, &recorder{}, actor.WithLimits(1, 2000, 2000))
		burst(t, p, 1000, actor.Success)
		first := p.Stats().Samples
		assert.Equal(t, int64(1000), first, "a pool not yet busy measures every request")
		burst(t, p, 1000, actor.Success)
		second := p.Stats().Samples - first
		assert.Less(t, second, int64(500), "busy: one grant in a stride is measured")
		assert.Positive(t, second)
		burst(t, p, 300, actor.Overload)
		st := p.Stats()
		assert.Equal(t, int64(300), st.Signals, "every load signal counts, measured or not")
		assert.Zero(t, st.Lost)
	})
}

// A pool whose permits end by Release reports no samples, but its grants
// still count for the stride: otherwise each would pay for a clock read.
func TestAdaptiveReleasedGrantsCountForTheStrideButAreNoSamples(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newAdaptive(t, &recorder{}, actor.WithLimits(1, 2000, 2000))
		burst(t, p, 1000, actor.Dropped)
		assert.Zero(t, p.Stats().Samples, "a release is no sample")
		burst(t, p, 1000, actor.Success)
		measured := p.Stats().Samples
		assert.Less(t, measured, int64(500), "the released grants made the pool busy: one in a stride is measured")
		assert.Positive(t, measured)
	})
}
