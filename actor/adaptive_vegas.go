package actor

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/internal/configerr"
)

// Vegas is TCP Vegas's controller: it estimates how many requests queue at
// the downstream from the no-load RTT (the least seen) and the round
// trip's mean RTT, queue = limit·(1 − minRTT/RTT) (minRTT: the least
// round trip's mean), and keeps that estimate
// between Alpha·log10(limit) and Beta·log10(limit): below, the limit grows
// (by Alpha·log10 when nothing queues, log10 otherwise, and log10 alone
// where a jump would pass the limit of the last load signal), above, it
// shrinks by log10(limit); a load signal cuts it by a twentieth. Every
// Probe round trips it
// forgets minRTT and takes the round trip's mean as the new one, so
// that a downstream that became slower for good is not read as a queue
// for ever (docs/adaptive.md). Zero fields take their defaults. Give each
// pool its own; it is not safe for concurrent use, and needs not be.
type Vegas struct {
	Alpha   float64 // queue estimate below Alpha·log10(limit) grows the limit; default 3
	Beta    float64 // above Beta·log10(limit) shrinks it; default 6
	Probe   int64   // round trips between resets of minRTT; default 1000
	w       roundTrip
	noLoad  time.Duration
	trips   int64
	refused int64 // the limit at the last load signal; 0: none, or passed since
}

// Update implements Controller.
func (v *Vegas) Update(s Sample, limit int64) int64 {
	if !v.w.add(s, min(limit, roundTripSamples)) {
		return limit
	}
	return v.w.decided(s.At, limit, v.decide(limit))
}

// decide is the round trip's decision, from limit.
func (v *Vegas) decide(limit int64) int64 {
	v.trips++
	if v.w.drops > 0 {
		// A cut by a twentieth, not Netflix's log10(limit): a downstream
		// whose queue is short refuses before its latency rises much, and
		// a fixed step would lose to the increases between the refusals.
		// Not by a tenth either: a refusal says the downstream's queue is
		// full, and a cut deeper than that queue leaves servers idle
		// (docs/adaptive.md, Vegas).
		v.refused = limit
		return int64(float64(limit) * 0.95)
	}
	if limit >= v.refused {
		v.refused = 0 // passed without a refusal: the downstream grew
	}
	// The no-load RTT is the least round trip's mean, not the least sample:
	// a downstream whose service time varies has samples below its mean
	// even unloaded, and their minimum would read as a queue.
	if m := v.w.mean(); v.noLoad == 0 || m < v.noLoad || v.trips%or(v.Probe, 1000) == 0 {
		v.noLoad = m
	}
	step := max(int64(math.Ceil(math.Log10(float64(limit)))), 1)
	if v.w.maxIn*2 < limit {
		return limit
	}
	queue := math.Ceil(float64(limit) * (1 - float64(v.noLoad)/float64(max(v.w.mean(), 1))))
	alpha, beta := or(v.Alpha, 3)*float64(step), or(v.Beta, 6)*float64(step)
	switch {
	case queue <= float64(step) && limit+int64(alpha) >= v.refused && v.refused > 0:
		// Near where the downstream last refused, probe by one step: a
		// jump of Alpha·s would pass it by more than the cut took back.
		return limit + step
	case queue <= float64(step):
		return limit + int64(alpha)
	case queue < alpha:
		return limit + step
	case queue > beta:
		return limit - step
	}
	return limit
}

func (v *Vegas) validate() error {
	switch {
	case v.Alpha < 0 || v.Beta < 0 || math.IsNaN(v.Alpha) || math.IsNaN(v.Beta):
		return configerr.Errorf("actor", "Vegas alpha and beta must be at least 0, got %v, %v", v.Alpha, v.Beta)
	case or(v.Alpha, 3) > or(v.Beta, 6):
		return configerr.Errorf("actor", "Vegas alpha (%v) must not exceed beta (%v)", or(v.Alpha, 3), or(v.Beta, 6))
	case v.Probe < 0:
		return configerr.Errorf("actor", "Vegas probe must be at least 0, got %d", v.Probe)
	}
	return nil
}
