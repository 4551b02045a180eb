package actor_test

import (
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/permits"
)

// adaptiveWalk drives p with random TryAcquires and random outcomes from
// one goroutine, letting the owner settle after each step, and checks
// after each that the limit is in [floor, ceiling] and that a TryAcquire
// was granted exactly when what is held was under the limit: the pool
// never grants past its limit, and after a decrease the permits granted
// before it drain before the next grant.
func adaptiveWalk(t *testing.T, seed uint64, ctl actor.Controller, floor, ceiling int64, steps int64) (over int64) {
	rng := rand.New(rand.NewPCG(seed, 29))
	initial := floor + rng.Int64N(ceiling-floor+1)
	p, err := actor.NewAdaptivePool(ctl, actor.WithLimits(floor, initial, ceiling))
	require.NoError(t, err)
	defer p.Close()
	var held []permits.Permit
	for i := range steps {
		limit := p.Limit()
		require.True(t, floor <= limit && limit <= ceiling, "step %d: limit %d out of [%d, %d]", i, limit, floor, ceiling)
		if int64(len(held)) > limit {
			over++ // granted before a decrease: they drain
		}
		if len(held) == 0 || rng.IntN(2) == 0 {
			pm, err := p.TryAcquire(1)
			require.Equal(t, int64(len(held)) < limit, err == nil, "step %d: %d held, limit %d: %v", i, len(held), limit, err)
			if err == nil {
				held = append(held, pm)
			}
		} else {
			k := rng.IntN(len(held))
			p.Done(held[k], actor.Outcome(rng.IntN(4)))
			held = append(held[:k], held[k+1:]...)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(3 * time.Millisecond))))
		synctest.Wait()
	}
	for _, pm := range held {
		pm.Release()
	}
	require.Positive(t, p.Stats().Changes, "the limit never moved")
	testutil.ReportDecisions(t, steps)
	return over
}

func TestAdaptiveLimitStaysInRangeUnderAnyOutcomes(t *testing.T) {
	steps := testutil.Volume(3000, 200_000)
	for name, ctl := range controllers() {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				adaptiveWalk(t, 1, ctl(), 2, 40, steps)
			})
		})
	}
}

func TestAdaptiveNeverGrantsPastALimitThatMoves(t *testing.T) {
	steps := testutil.Volume(3000, 200_000)
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(2, 29))
		// Anything, out of range too: the pool clamps it.
		jump := &recorder{next: func(actor.Sample, int64) int64 { return rng.Int64N(60) - 10 }}
		over := adaptiveWalk(t, 2, jump, 1, 30, steps)
		require.Positive(t, over, "no step held more than a lowered limit")
	})
}
