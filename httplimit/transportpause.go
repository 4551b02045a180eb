package httplimit

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/internal/pause"
)

// A response that asks its client to wait (a 429, a 503 with Retry-After)
// speaks for its host, not for every host the Transport sends to: the
// Transport pauses that host (package internal/pause).

// waitHost waits until the host of r is no longer paused, and a jitter
// more, and returns the instant it began, which starts the attempt's wait
// (Stats.Paced, WithObserver). A pause that ends after ctx's deadline
// fails at once, with the wait, as a limiter's refusal does.
func (t *Transport) waitHost(ctx context.Context, r *http.Request) (time.Time, error) {
	now := time.Now()
	if t.pauseLimiter {
		return now, nil // the limiter carries the pause, in its FIFO order
	}
	host := hostOf(r)
	until, ok, ended := t.hosts.Check(host, now)
	if !ok {
		if !ended.IsZero() {
			t.paused.forget(host, now)
			if t.logger != nil {
				t.log(ended, slog.LevelInfo, msgHostResumed, slog.String(keyHost, host))
			}
		}
		return now, nil
	}
	return now, pause.Wait(ctx, now, until, t.jitter)
}

// hostOf is the host a request goes to, with its port if it names one.
func hostOf(r *http.Request) string {
	if r.URL != nil && r.URL.Host != "" {
		return r.URL.Host
	}
	return r.Host
}
