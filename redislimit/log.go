package redislimit

import (
	"context"
	"log/slog"
	"time"
)

// The log lines of a Limiter, Window or Keyed (WithLogger). The messages
// and the attribute keys are stable: docs/observability.md lists them.
const (
	msgFailedClosed = "sluice: redis failed closed"
	msgFellOpen     = "sluice: redis fell open"
	msgRecovered    = "sluice: redis recovered"

	keyRedisKey = "sluice.redis.key"
	keyError    = "error"
	keyDownFor  = "down_for"
)

// WithLogger writes a line to logger when Redis goes out of reach and
// when it comes back, never for a request:
//
//   - "sluice: redis failed closed" (Warn) at the first call that finds
//     Redis out of reach (refused, timed out, hung: not an error reply of
//     the script's), whose requests, and those until Redis answers again,
//     fail with an *UnavailableError; "sluice: redis fell open" instead
//     with WithFailOpen, whose requests go to the local limiter. Either
//     carries error, the call's error;
//   - "sluice: redis recovered" (Info) at the first call Redis answers
//     after that, with down_for, the time from the call that found Redis
//     out of reach to this one.
//
// Every line carries sluice.redis.key: the Limiter's or the Window's key,
// or the Keyed's prefix (never one of its keys). A line is written by the
// goroutine that takes in the call's answer (the owner, or a lone caller
// on the direct path), once per outage. nil, the default, writes nothing
// and costs one test of a bool per answered call.
func WithLogger(logger *slog.Logger) Option {
	return optionFunc(func(c *config) { c.logger = logger })
}

// outage is what the holder of the state remembers of a node's reach:
// whether it is out of reach, since when (the engine's clock). On a
// Cluster each master has its own: one down writes its lines once, while
// the others answer.
type outage struct {
	on    bool
	since int64
}

// wentDown takes in a call that found Redis out of reach, at now, and
// writes the line if it starts an outage.
func (e *engine) wentDown(n *node, now int64, err error) {
	if n.out.on {
		return
	}
	n.out = outage{on: true, since: now}
	if e.cfg.logger == nil {
		return
	}
	msg := msgFailedClosed
	if e.local != nil {
		msg = msgFellOpen
	}
	e.log(now, slog.LevelWarn, msg, slog.String(keyError, err.Error()))
}

// cameBack takes in a call Redis answered, at now, and writes the line if
// it ends an outage. Inlined: one test of a bool per answered call.
func (e *engine) cameBack(n *node, now int64) {
	if n.out.on {
		e.recovered(n, now)
	}
}

func (e *engine) recovered(n *node, now int64) {
	n.out.on = false
	if e.cfg.logger != nil {
		e.log(now, slog.LevelInfo, msgRecovered, slog.Duration(keyDownFor, time.Duration(now-n.out.since)))
	}
}

// log writes one line at level, timed at now, with the key first.
func (e *engine) log(now int64, level slog.Level, msg string, attrs ...slog.Attr) {
	ctx := context.Background()
	h := e.cfg.logger.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	rec := slog.NewRecord(e.epoch.Add(time.Duration(now)), level, msg, 0)
	rec.AddAttrs(slog.String(keyRedisKey, e.logKey))
	rec.AddAttrs(attrs...)
	_ = h.Handle(ctx, rec) // a handler's error has nowhere to go
}
