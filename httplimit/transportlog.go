package httplimit

import (
	"context"
	"log/slog"
	"time"
)

// The log lines of a Transport (WithLogger). The messages and the
// attribute keys are stable: docs/observability.md lists them.
const (
	msgHostPaused  = "sluice: host paused"
	msgHostResumed = "sluice: host resumed"

	keyHost       = "http.host"
	keyStatus     = "http.status_code"
	keyRetryAfter = "retry_after"
	keyCapped     = "capped"
)

// WithLogger writes a line to logger when a host's state changes, never
// for a request:
//
//   - "sluice: host paused", at Warn, when a response (a 429, a 503 with
//     Retry-After) starts a pause of its host, with http.host,
//     http.status_code, retry_after (the pause, after WithMaxPause) and
//     capped (whether the response asked for longer); a response that
//     extends a pause under way writes none;
//   - "sluice: host resumed", at Info, with http.host, timed at the pause's
//     end and written by the first request to the host after it.
//
// Each line is written by the RoundTrip that made the change, with no lock
// held: a slow handler slows that request only. With WithPauseLimiter the
// limiter carries the pause, and tells it with its own logger
// (actor.WithLogger). The circuit breaker of WithBreaker tells its
// transitions with its own logger too (breaker.WithLogger; name it for
// the API with breaker.WithName). nil, the default, writes nothing and
// costs nothing.
func WithLogger(logger *slog.Logger) TransportOption {
	return transportOption(func(c *transportConfig) { c.logger = logger })
}

// logPaused writes the line of a pause of host, by a response with status
// code at now, for wait; asked is what the response asked for.
func (t *Transport) logPaused(host string, code int, now time.Time, wait, asked time.Duration) {
	t.log(now, slog.LevelWarn, msgHostPaused,
		slog.String(keyHost, host), slog.Int(keyStatus, code),
		slog.Duration(keyRetryAfter, wait), slog.Bool(keyCapped, asked > wait))
}

// log writes one line, timed at.
func (t *Transport) log(at time.Time, level slog.Level, msg string, attrs ...slog.Attr) {
	ctx := context.Background()
	if t.logger == nil || !t.logger.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(at, level, msg, 0)
	r.AddAttrs(attrs...)
	_ = t.logger.Handler().Handle(ctx, r) // a handler's error has nowhere to go
}
