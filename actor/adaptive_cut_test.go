package actor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/actor"
)

// A controller driven by hand: samples at instants the test chooses.
type drive struct {
	ctl   actor.Controller
	limit int64
	at    time.Duration
}

// signal reports one Overload at the next millisecond and returns the limit.
func (d *drive) signal() int64 {
	d.at += time.Millisecond
	d.limit = d.ctl.Update(actor.Sample{Outcome: actor.Overload, InFlight: d.limit, At: d.at}, d.limit)
	return d.limit
}

// trip reports a round trip of 8 successes of rtt, all granted after the
// last decision and with the limit in flight, and returns the limit.
func (d *drive) trip(rtt time.Duration) int64 {
	d.at += rtt
	for range 8 {
		d.limit = d.ctl.Update(actor.Sample{Outcome: actor.Success, RTT: rtt, InFlight: d.limit, At: d.at}, d.limit)
	}
	return d.limit
}

// A load signal says the downstream's queue is full: every controller
// cuts by a twentieth, not deeper than a queue of C/19 (docs/adaptive.md,
// Controllers). A tenth, as before, left servers idle behind short queues.
func TestAdaptiveLoadSignalCutsByATwentieth(t *testing.T) {
	for name, ctl := range controllers() {
		t.Run(name, func(t *testing.T) {
			d := &drive{ctl: ctl(), limit: 100}
			assert.Equal(t, int64(95), d.signal())
		})
	}
}

// After a load signal Vegas probes by log10(limit) while a jump of
// Alpha·log10 would pass the limit the signal came at, and jumps again
// once it has passed it without a new signal.
func TestVegasProbesByOneStepNearTheLastLoadSignal(t *testing.T) {
	d := &drive{ctl: &actor.Vegas{}, limit: 100}
	got := []int64{d.signal()}
	for range 4 {
		got = append(got, d.trip(10*time.Millisecond)) // no queue: RTT at its least
	}
	assert.Equal(t, []int64{95, 97, 99, 101, 110}, got) // log10(101) rounds up to 3
}

// Gradient2 adds no headroom on a load signal: the cut is Smoothing/4 of
// the limit, whatever QueueSize.
func TestGradient2AddsNoHeadroomOnALoadSignal(t *testing.T) {
	d := &drive{ctl: &actor.Gradient2{Smoothing: 0.4, QueueSize: 20}, limit: 100}
	assert.Equal(t, int64(90), d.signal())
}
