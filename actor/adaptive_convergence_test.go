package actor_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/testutil"
)

func controllers() map[string]func() actor.Controller {
	return map[string]func() actor.Controller{
		"AIMD":      func() actor.Controller { return &actor.AIMD{} },
		"Vegas":     func() actor.Controller { return &actor.Vegas{} },
		"Gradient2": func() actor.Controller { return &actor.Gradient2{} },
	}
}

// The bounds docs/adaptive.md states, on the model downstream of
// adaptive_model_test.go with C = 100 and twice the offered load.
const (
	convergeWithin = time.Second            // from the initial limit, 20
	halvedWithin   = 250 * time.Millisecond // after C halves
	doubledWithin  = 500 * time.Millisecond // after C doubles back
)

// unloadedP99 is the model's p99 latency at a tenth of its capacity.
func unloadedP99(t *testing.T) time.Duration {
	var p99 time.Duration
	synctest.Test(t, func(t *testing.T) {
		m := newDownstream(t, &actor.AIMD{}, 0.1*100*float64(time.Second/modelService))
		p99 = m.run(phase{servers: 100, dur: 2 * time.Second}).p99()
	})
	return p99
}

func TestAdaptiveConvergesAndHoldsGoodputWhenCapacityHalvesAndDoubles(t *testing.T) {
	const c = 100
	unloaded := unloadedP99(t)
	dur := time.Duration(testutil.Volume(3, 10)) * time.Second
	phases := []struct {
		phase
		within time.Duration
	}{
		{phase{c, dur, convergeWithin}, convergeWithin},
		{phase{c / 2, dur, halvedWithin}, halvedWithin},
		{phase{c, dur, doubledWithin}, doubledWithin},
	}
	for name, ctl := range controllers() {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newDownstream(t, ctl(), 2*c*float64(time.Second/modelService))
				for _, ph := range phases {
					r := m.run(ph.phase)
					settled := r.settled(ph.servers)
					t.Logf("C=%d: within 20%% after %v, goodput %.3f, p99 %v (unloaded %v), shed %d, refused %d, highest limit %d",
						ph.servers, settled, r.goodput(ph.phase), r.p99(), unloaded, r.shed, r.refused, r.maxLimit)
					require.GreaterOrEqual(t, settled, time.Duration(0), "C=%d: never settled within 20%%", ph.servers)
					assert.LessOrEqual(t, settled, ph.within, "C=%d: settled too late", ph.servers)
					assert.GreaterOrEqual(t, r.goodput(ph.phase), 0.9, "C=%d: goodput", ph.servers)
					assert.LessOrEqual(t, r.p99(), 2*unloaded, "C=%d: p99", ph.servers)
					assert.LessOrEqual(t, r.maxLimit, m.p.Stats().Ceiling)
				}
			})
		})
	}
}
