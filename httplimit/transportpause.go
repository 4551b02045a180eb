package httplimit

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/permits"
)

// A response that asks its client to wait (a 429, a 503 with Retry-After)
// speaks for its host, not for every host the Transport sends to: the
// Transport pauses that host. Requests to it wait for the pause to end
// before they acquire anything, and each waiter, and each retry, adds a
// jitter of its own above the end, never below it, so that the callers a
// shared Retry-After stopped do not all come back at one instant.

// hostPauses holds, per host, the instant until which it asked not to be
// sent to. A host is dropped once its pause has passed, so the map holds
// only hosts paused now.
type hostPauses struct {
	m sync.Map // host -> *atomic.Int64, the end in Unix ns
}

// pause makes host paused until at least until; an earlier end never
// shortens a later one.
func (h *hostPauses) pause(host string, until time.Time) {
	end := until.UnixNano()
	v, _ := h.m.LoadOrStore(host, new(atomic.Int64))
	p := v.(*atomic.Int64)
	for {
		cur := p.Load()
		if cur >= end || p.CompareAndSwap(cur, end) {
			return
		}
	}
}

// until returns the end of host's pause, if it is paused at now.
func (h *hostPauses) until(host string, now time.Time) (time.Time, bool) {
	v, ok := h.m.Load(host)
	if !ok {
		return time.Time{}, false
	}
	end := v.(*atomic.Int64).Load()
	if end <= now.UnixNano() {
		h.m.CompareAndDelete(host, v)
		return time.Time{}, false
	}
	return time.Unix(0, end), true
}

// waitHost waits until the host of r is no longer paused, and a jitter
// more. A pause that ends after ctx's deadline fails at once, with the
// wait, as a limiter's refusal does.
func (t *Transport) waitHost(ctx context.Context, r *http.Request) error {
	if t.pauseLimiter {
		return nil // the limiter carries the pause, in its FIFO order
	}
	now := time.Now()
	until, ok := t.hosts.until(hostOf(r), now)
	if !ok {
		return nil
	}
	wait := until.Sub(now)
	wait += t.jitter(wait)
	if dl, ok := ctx.Deadline(); ok && !now.Add(wait).Before(dl) {
		return &permits.RateLimitError{RetryAfter: wait, Cause: context.DeadlineExceeded}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// hostOf is the host a request goes to, with its port if it names one.
func hostOf(r *http.Request) string {
	if r.URL != nil && r.URL.Host != "" {
		return r.URL.Host
	}
	return r.Host
}

// jitterAbove draws what is added to a wait of d: uniform on [0, spread],
// the spread a quarter of d, at least 100 ms and at most 5 s. Enough to
// spread the callers one Retry-After stopped over a tenth of a second or
// more; never a large part of a long wait.
func jitterAbove(d time.Duration) time.Duration {
	spread := min(max(d/4, 100*time.Millisecond), 5*time.Second)
	return rand.N(spread + 1)
}
