package actor

import (
	"math"

	"github.com/sluicehq/sluice/internal/configerr"
)

// Gradient2 is Netflix's second gradient controller: it compares the
// round trip's mean RTT (short) with an exponential average of them over
// LongWindow round trips (long), and scales the limit by the gradient
// g = clamp(Tolerance·long/short, 0.5, 1), plus QueueSize of headroom:
// limit' = (1−Smoothing)·limit + Smoothing·(g·limit + QueueSize). While
// latency stays within Tolerance of its long-term level the limit grows by
// Smoothing·QueueSize per round trip; when it rises beyond, the limit
// shrinks in proportion; a load signal counts as a gradient of 0.75 with
// no headroom, a cut by Smoothing/4.
// When short falls below half of long (the downstream recovered), long
// decays by 5% a round trip so that it follows (docs/adaptive.md). Zero
// fields take their defaults. Give each pool its own; it is not safe for
// concurrent use, and needs not be.
type Gradient2 struct {
	Tolerance  float64 // short may exceed long by this factor before the limit shrinks; default 1.5
	Smoothing  float64 // weight of each new estimate, in (0, 1]; default 0.2
	LongWindow int64   // round trips the long-term average spans; default 60
	QueueSize  int64   // headroom added per round trip; default ⌈√limit⌉
	w          roundTrip
	long, est  float64 // ns; the limit before rounding
}

// Update implements Controller.
func (g *Gradient2) Update(s Sample, limit int64) int64 {
	if !g.w.add(s, min(limit, roundTripSamples)) {
		return limit
	}
	return g.w.decided(s.At, limit, g.decide(limit))
}

// decide is the round trip's decision, from limit.
func (g *Gradient2) decide(limit int64) int64 {
	if math.Round(g.est) != float64(limit) {
		g.est = float64(limit) // the pool clamped it, or a first decision
	}
	sm := or(g.Smoothing, 0.2)
	if g.w.drops > 0 {
		// A load signal says the downstream's queue is full: no headroom
		// is added, and the gradient is 0.75, a cut by Smoothing/4 (a
		// twentieth by default). Netflix's 0.5 with the headroom cut by a
		// tenth, deeper than a short queue, and left servers idle
		// (docs/adaptive.md, Gradient2).
		g.est *= 1 - sm*(1-signalGradient)
		return int64(math.Round(g.est))
	}
	short := float64(max(g.w.mean(), 1))
	if g.long == 0 {
		g.long = short
	}
	g.long += (short - g.long) * 2 / float64(or(g.LongWindow, 60)+1)
	if g.long/short > 2 {
		g.long *= 0.95 // the downstream got faster: catch up
	}
	if g.w.maxIn*2 < limit {
		return limit // the limit is not what holds the callers back
	}
	grad := max(0.5, min(1, or(g.Tolerance, 1.5)*g.long/short))
	queue := float64(g.QueueSize)
	if queue == 0 {
		queue = math.Ceil(math.Sqrt(g.est))
	}
	g.est = (1-sm)*g.est + sm*(grad*g.est+queue)
	return int64(math.Round(g.est))
}

// signalGradient is the gradient a load signal counts as.
const signalGradient = 0.75

func (g *Gradient2) validate() error {
	switch {
	case g.Tolerance != 0 && !(g.Tolerance >= 1):
		return configerr.Errorf("actor", "Gradient2 tolerance must be at least 1, got %v", g.Tolerance)
	case g.Smoothing < 0 || g.Smoothing > 1 || math.IsNaN(g.Smoothing):
		return configerr.Errorf("actor", "Gradient2 smoothing must be in (0, 1], got %v", g.Smoothing)
	case g.LongWindow < 0 || g.QueueSize < 0:
		return configerr.Errorf("actor", "Gradient2 long window and queue size must be at least 0, got %d, %d", g.LongWindow, g.QueueSize)
	}
	return nil
}
