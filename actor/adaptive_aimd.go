package actor

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/internal/configerr"
)

// AIMD is the controller of TCP's congestion window: it adds Increase to
// the limit for each round trip of successes that used at least half of
// it, and multiplies it by Backoff on a load signal (Overload, Timeout, or
// an RTT above Timeout when set), at most once per round trip. It needs no
// latency model, only the downstream's refusals: the limit saws between
// Backoff·L and L, where L is the concurrency at which refusals start
// (docs/adaptive.md). Zero fields take their defaults. Give each pool its
// own; it is not safe for concurrent use, and needs not be (Controller).
type AIMD struct {
	Increase int64         // added per round trip; default 1
	Backoff  float64       // multiplied by on a load signal, in (0, 1); default 0.95 (docs/adaptive.md)
	Timeout  time.Duration // a success slower than this is a Timeout; 0: none
	w        roundTrip
}

// Update implements Controller.
func (a *AIMD) Update(s Sample, limit int64) int64 {
	if !a.w.add(a.sample(s), min(limit, roundTripSamples)) {
		return limit
	}
	return a.w.decided(s.At, limit, a.decide(limit))
}

// decide is the round trip's decision, from limit.
func (a *AIMD) decide(limit int64) int64 {
	if a.w.drops > 0 {
		return int64(math.Floor(float64(limit) * or(a.Backoff, 0.95)))
	}
	if a.w.maxIn*2 < limit {
		return limit // the limit is not what holds the callers back
	}
	return limit + or(a.Increase, 1)
}

// sample reads a success slower than Timeout as a Timeout.
func (a *AIMD) sample(s Sample) Sample {
	if a.Timeout > 0 && s.Outcome == Success && s.RTT > a.Timeout {
		s.Outcome = Timeout
	}
	return s
}

func (a *AIMD) validate() error {
	switch {
	case a.Increase < 0:
		return configerr.Errorf("actor", "AIMD increase must be at least 0, got %d", a.Increase)
	case a.Backoff < 0 || a.Backoff >= 1 || math.IsNaN(a.Backoff):
		return configerr.Errorf("actor", "AIMD backoff must be in (0, 1), got %v", a.Backoff)
	case a.Timeout < 0:
		return configerr.Errorf("actor", "AIMD timeout must be at least 0, got %v", a.Timeout)
	}
	return nil
}

// roundTripSamples is how many fresh samples a round trip's decision
// waits for (fewer when the limit is lower): enough that one slow request
// is not the whole picture, few enough that a decision comes about one RTT
// after the last.
const roundTripSamples = 8

// or is v, or def when v is the zero value.
func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
