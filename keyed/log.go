package keyed

import (
	"context"
	"log/slog"
)

// The log line of a Limiter (WithLogger). The message and the attribute
// keys are stable: docs/observability.md lists them.
const (
	msgEvicted = "sluice: keyed evicted idle keys"

	keyName    = "sluice.limiter.name"
	keyShard   = "sluice.shard"
	keyEvicted = "keys_evicted"
	keyLive    = "keys_live"
)

// WithLogger writes a line to logger, at Debug, for every pass of a
// shard's owner over its table that dropped idle keys: "sluice: keyed
// evicted idle keys", with the limiter's name (WithName), the shard, the
// keys the pass dropped (keys_evicted) and the keys the shard still holds
// (keys_live). One line per pass, never one per key or per request; a
// pass that dropped nothing writes none. The owner writes it, with no
// lock held, once the pass is over: a slow handler delays that shard's
// requests by its time, once per pass that evicted (at most about a
// hundred a second, and far fewer for large tables). nil, the default,
// writes nothing and costs nothing.
func WithLogger(logger *slog.Logger) Option {
	return optionFunc(func(c *config) { c.logger = logger })
}

// logEvicted writes the line of a pass at now that dropped evicted keys,
// live keys staying. It runs on the owner, with no lock held.
func (s *shard[K]) logEvicted(now int64, evicted, live int) {
	logger := s.l.cfg.logger
	ctx := context.Background()
	if logger == nil || evicted == 0 || !logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	r := slog.NewRecord(s.l.t(now), slog.LevelDebug, msgEvicted, 0)
	r.AddAttrs(
		slog.String(keyName, s.l.cfg.name),
		slog.Int(keyShard, s.idx),
		slog.Int(keyEvicted, evicted),
		slog.Int(keyLive, live),
	)
	_ = logger.Handler().Handle(ctx, r) // a handler's error has nowhere to go
}
