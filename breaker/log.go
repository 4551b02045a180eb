package breaker

import (
	"context"
	"log/slog"
)

// The log lines of a Breaker (WithLogger), one per transition. The messages
// and the attribute keys are stable: docs/observability.md lists them.
const (
	msgOpened   = "sluice: breaker opened"
	msgHalfOpen = "sluice: breaker half-open"
	msgClosed   = "sluice: breaker closed"

	keyName    = "sluice.breaker.name"
	keyFrom    = "sluice.breaker.state.from"
	keyTo      = "sluice.breaker.state.to"
	keyDropped = "transitions_dropped"
)

// WithLogger writes a line to logger for every transition: "sluice: breaker
// opened" at Warn, "sluice: breaker half-open" and "sluice: breaker closed"
// at Info, with the breaker's name (WithName, "" without one), the states
// from and to, and, when the delivery fell behind, the count of transitions
// dropped before this one. A line's time is the instant of the transition,
// not of its writing. No call writes a line of its own: only transitions do.
//
// The lines go through the hook's delivery (see WithOnTransition), the line
// before the hook's call for the same transition: no lock is held, one
// goroutine at a time writes them, in order, and a storm of transitions
// writes the latest four and counts the others. The call that delivers (a
// Do that made or found the transition, a State, a Snapshot) waits for the
// handler, so a slow handler slows the calls that change the state, and
// only those. nil, the default, writes nothing and costs nothing.
func WithLogger(logger *slog.Logger) Option {
	return optionFunc(func(c *config) { c.logger = logger })
}

// delivery returns what the hook's delivery calls for every transition:
// the log line, then the hook; nil if there is neither.
func (c *config) delivery() func(Transition) {
	hook, logger := c.onTransition, c.logger
	switch {
	case logger == nil:
		return hook
	case hook == nil:
		return func(t Transition) { logTransition(logger, t) }
	}
	return func(t Transition) {
		logTransition(logger, t)
		hook(t)
	}
}

// logTransition writes t's line, timed at t.At.
func logTransition(logger *slog.Logger, t Transition) {
	level, msg := slog.LevelInfo, msgClosed
	switch t.To {
	case Open:
		level, msg = slog.LevelWarn, msgOpened
	case HalfOpen:
		msg = msgHalfOpen
	}
	ctx := context.Background()
	if !logger.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(t.At, level, msg, 0)
	r.AddAttrs(
		slog.String(keyName, t.Name),
		slog.String(keyFrom, t.From.String()),
		slog.String(keyTo, t.To.String()),
	)
	if t.Dropped > 0 {
		r.AddAttrs(slog.Int64(keyDropped, t.Dropped))
	}
	_ = logger.Handler().Handle(ctx, r) // a handler's error has nowhere to go
}
