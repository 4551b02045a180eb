package actor

import "time"

// Outcome is what became of a request that held an adaptive pool's permit,
// as its caller reports it with AdaptivePool.Done.
type Outcome uint8

const (
	// Dropped: the request says nothing about the downstream's load (the
	// caller gave up, a 4xx, a permit never used). The capacity comes back
	// and the controller sees no sample. Permit.Release reports it.
	Dropped Outcome = iota
	// Success: the downstream served the request; its latency, from the
	// grant to Done, is a sample.
	Success
	// Overload: the downstream refused for load (HTTP 429 or 503, gRPC
	// ResourceExhausted or Unavailable).
	Overload
	// Timeout: the request ran out of time waiting for the downstream.
	Timeout
)

// Sample is one outcome as a controller sees it, on the pool's timeline.
type Sample struct {
	Outcome  Outcome
	RTT      time.Duration // from the grant to Done, measured by the pool
	InFlight int64         // units in flight just after the grant, its own included
	At       time.Duration // when Done reported it, since the pool started
}

// Granted is the instant the request was granted at, since the pool
// started: a controller ignores samples granted before its last change of
// the limit, which tell of the limit before it.
func (s Sample) Granted() time.Duration { return s.At - s.RTT }

// overloaded reports whether the sample is a load signal.
func (s Sample) overloaded() bool { return s.Outcome == Overload || s.Outcome == Timeout }

// Controller moves an adaptive pool's limit. The pool calls Update on its
// owner goroutine, one sample at a time in the order Done reported them, so
// a controller needs no lock; the pool clamps what it returns to [floor,
// ceiling]. A controller keeps state: give each pool its own. AIMD, Vegas
// and Gradient2 are the ones sluice ships (docs/adaptive.md).
type Controller interface {
	// Update is told of one sample and the current limit, and returns the
	// new limit (the same one to keep it).
	Update(s Sample, limit int64) int64
}

// validator is a controller of this package that checks its parameters.
type validator interface{ validate() error }

// roundTrip is what the controllers share: one decision per round trip.
// A sample granted before the last decision tells of the limit before it
// and is not counted; the samples after it are gathered until need of
// them have come, then decided on. Decisions are thus at least one RTT
// apart, however many samples arrive in between. A load signal decides at
// once, but only one granted at least an RTT after the last cut counts: the refusals that follow a cut were caused by the requests
// admitted before it, still queued downstream, and one limit's excess is
// one signal, not many (TCP's one cut per window).
type roundTrip struct {
	last     time.Duration // instant of the last decision
	cut      time.Duration // instant of the last decision that lowered the limit
	rtt      time.Duration // the mean RTT it decided on
	n        int64         // successes gathered since
	sum, min time.Duration // their RTTs
	drops    int64         // load signals gathered since
	maxIn    int64         // the most in flight any sample saw
}

// add gathers s if it is fresh and reports whether a decision is due.
func (w *roundTrip) add(s Sample, need int64) bool {
	switch {
	case s.Outcome == Dropped || s.Granted() < w.last:
		return false
	case s.overloaded():
		if s.Granted() < w.cut+w.rtt {
			return false
		}
		w.drops++
		w.maxIn = max(w.maxIn, s.InFlight)
		return true
	}
	if w.n == 0 || s.RTT < w.min {
		w.min = s.RTT
	}
	w.n++
	w.sum += s.RTT
	w.maxIn = max(w.maxIn, s.InFlight)
	return w.n >= max(need, 1)
}

// mean is the gathered successes' mean RTT (0 for none).
func (w *roundTrip) mean() time.Duration { return w.sum / time.Duration(max(w.n, 1)) }

// decided starts the next round trip at at, after a decision from limit
// to next, and returns next.
func (w *roundTrip) decided(at time.Duration, limit, next int64) int64 {
	rtt, cut := w.rtt, w.cut
	if w.n > 0 {
		rtt = w.mean()
	}
	if next < limit {
		cut = at
	}
	*w = roundTrip{last: at, cut: cut, rtt: rtt}
	return next
}
