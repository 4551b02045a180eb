package breaker

import "time"

// Snapshot is what a breaker counts, read at one instant under its lock so
// that the fields agree with each other. Snapshot returns one.
type Snapshot struct {
	Name   string // as given with WithName
	State  State
	Forced bool // held open by ForceOpen until Reset

	// The outcomes counted while Closed: in rate mode those still in the
	// window (made between 0.9·window and window ago or later), in count
	// mode those since the breaker last closed (or was Reset). Ignored
	// outcomes are not calls; a slow call (WithSlowCallThreshold) is also a
	// failure. The counts stay as they were while the breaker is open or
	// half-open, until it closes.
	Calls, Failures, SlowCalls int64
	// ConsecutiveFailures is count mode's count towards opening.
	ConsecutiveFailures int

	// Half-open: the probes running, and those that succeeded so far.
	ProbesInFlight, ProbeSuccesses int

	// OpenTimeout is how long the current open spell lasts (or the next,
	// while closed or half-open): the open timeout, grown by
	// WithOpenTimeoutGrowth after repeated trips.
	OpenTimeout time.Duration
	// RetryAfter is what a call refused now would be told, or 0 if a call
	// would be admitted.
	RetryAfter time.Duration

	// LastTransition is when the breaker last changed state; the zero Time
	// if it never has.
	LastTransition time.Time
	// Transitions counts every change of state since New.
	Transitions int64
	// The transitions waiting for the hook, and those it never received
	// because it fell behind (see WithOnTransition).
	PendingTransitions int
	DroppedTransitions int64
}

// Snapshot returns the breaker's state and counts. Like State, it makes the
// transitions that time alone causes (an open timeout that has passed, stuck
// probes) and delivers transitions waiting for the hook.
func (b *Breaker) Snapshot() Snapshot {
	b.mu.Lock()
	now := b.elapsed()
	if b.state != Closed {
		b.advance(now)
	}
	s := Snapshot{
		Name: b.cfg.name, State: b.state, Forced: b.forced,
		Calls: b.nCalls, Failures: b.nFailed, SlowCalls: b.nSlowed,
		ConsecutiveFailures: b.consecutive,
		OpenTimeout:         b.openTimeout,
		Transitions:         b.transitions,
	}
	if b.win != nil {
		if b.state == Closed {
			b.win.Advance(now)
		}
		t := b.win.RunningTotals()
		s.Calls, s.Failures, s.SlowCalls = t[calls], t[failures], t[slowCalls]
	}
	if b.state == HalfOpen {
		s.ProbesInFlight, s.ProbeSuccesses = b.inflight, b.successes
	}
	if b.state == Open || (b.state == HalfOpen && b.inflight+b.successes >= b.cfg.probes) {
		s.RetryAfter = b.retryAfter(now)
	}
	if b.transitions > 0 {
		s.LastTransition = b.origin.Add(b.lastTransition)
	}
	if b.hook != nil {
		s.PendingTransitions, s.DroppedTransitions = int(b.hook.n), b.hook.dropped
	}
	b.unlock()
	return s
}

// ForceOpen opens the breaker and holds it open, refusing every call, until
// Reset: for an incident, when the operator knows better than the counts.
// Calls in flight become stale: their outcomes do not count. Refusals say
// Forced, with the open timeout as RetryAfter. Forcing an open breaker open
// holds it there; the transition to Open, if any, goes to the hook.
func (b *Breaker) ForceOpen() {
	b.mu.Lock()
	b.forced = true
	if b.state != Open {
		b.setState(Open, b.elapsed())
	}
	b.unlock()
}

// Reset closes the breaker with every count cleared and the open timeout
// back to its configured value, ending ForceOpen. Calls in flight become
// stale: their outcomes do not count. The transition to Closed, if any, goes
// to the hook; resetting a closed breaker only clears its counts.
func (b *Breaker) Reset() {
	b.mu.Lock()
	b.forced = false
	b.openTimeout = b.cfg.openTimeout
	if b.state != Closed {
		b.setState(Closed, b.elapsed())
	} else {
		b.gen++
		b.clearCounts()
	}
	b.unlock()
}
