package actor

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// The log lines of a Limiter (WithLogger). The messages and the attribute
// keys are stable: docs/observability.md lists them.
const (
	msgPaused       = "sluice: limiter paused"
	msgResumed      = "sluice: limiter resumed"
	msgRateChanged  = "sluice: limiter rate changed"
	msgBurstChanged = "sluice: limiter burst changed"

	keyName       = "sluice.limiter.name"
	keyUntil      = "until"
	keyRetryAfter = "retry_after"
	keyPausedFor  = "paused_for"
	keyRate       = "rate"
	keyBurst      = "burst"
)

// WithLogger writes a line to logger, at Info, when the limiter's state
// changes, never for a request:
//
//   - "sluice: limiter paused" when a Pause starts a pause (one that extends
//     a pause under way writes none), with until and retry_after (the time
//     from the Pause to until), and "sluice: limiter resumed" when it ends,
//     with paused_for (from its start to its end, extensions included);
//   - "sluice: limiter rate changed" after a SetRate, with rate, and
//     "sluice: limiter burst changed" after a SetBurst, with burst.
//
// Every line carries sluice.limiter.name (WithName). The SetRate and
// SetBurst lines are written by their callers once the owner has applied
// the change. The pause lines are written by the owner goroutine, so that
// they keep its order: the paused line while the limiter grants nothing
// anyway, the resumed line at the wake-up that ends the pause, whose grants
// a slow handler delays by its own time, once per pause. nil, the default,
// writes nothing and costs nothing.
func WithLogger(logger *slog.Logger) Option {
	return optionFunc(func(c *config) { c.logger = logger })
}

// pauseLog is what the owner remembers to write the resumed line: whether
// a paused line is out, and the instant of its pause's start.
type pauseLog struct {
	on    bool
	start int64
}

// logPause writes the paused line if a Pause to until, applied at now,
// starts a pause. It runs on the owner, before the pause is applied.
func (r *runtime) logPause(now, until int64) {
	if r.cfg.logger == nil || until <= now {
		return
	}
	r.logResumed(now) // a pause that ended before the owner noticed
	if r.paused > now {
		return // extends the pause under way
	}
	r.pause = pauseLog{on: true, start: now}
	r.log(r.epoch.Add(time.Duration(now)), msgPaused,
		slog.Time(keyUntil, r.epoch.Add(time.Duration(until))),
		slog.Duration(keyRetryAfter, time.Duration(until-now)))
}

// logResumed writes the resumed line if a pause it logged has ended by
// now. It runs on the owner, at every wake-up: inlined, one test of a bool
// without a logger.
func (r *runtime) logResumed(now int64) {
	if r.pause.on && r.paused <= now {
		r.writeResumed()
	}
}

func (r *runtime) writeResumed() {
	r.pause.on = false
	r.log(r.epoch.Add(time.Duration(r.paused)), msgResumed,
		slog.Duration(keyPausedFor, time.Duration(r.paused-r.pause.start)))
}

// logTuned writes the line of a SetRate or a SetBurst the owner applied.
func (l *Limiter) logTuned(rate algorithms.Rate, burst int64) {
	r := l.rt
	if r.cfg.logger == nil {
		return
	}
	if burst > 0 {
		r.log(r.cfg.clock.Now(), msgBurstChanged, slog.Int64(keyBurst, burst))
		return
	}
	r.log(r.cfg.clock.Now(), msgRateChanged, slog.String(keyRate, rate.String()))
}

// log writes one line at Info, timed at, with the limiter's name first.
func (r *runtime) log(at time.Time, msg string, attrs ...slog.Attr) {
	ctx := context.Background()
	h := r.cfg.logger.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	rec := slog.NewRecord(at, slog.LevelInfo, msg, 0)
	rec.AddAttrs(slog.String(keyName, r.cfg.name))
	rec.AddAttrs(attrs...)
	_ = h.Handle(ctx, rec) // a handler's error has nowhere to go
}
