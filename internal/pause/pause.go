// Package pause holds the pauses a client keeps per destination: the
// instant until which a host (httplimit) or a gRPC target (grpclimit)
// asked not to be sent to, and the jitter each waiter adds above it.
//
// A response that asks its client to wait (a 429, a ResourceExhausted
// with RetryInfo) speaks for its destination, not for every destination
// the client sends to. Requests to it wait for the pause to end before
// they acquire anything, and each waiter, and each retry, adds a jitter
// of its own above the end, never below it, so that the callers a shared
// wait stopped do not all come back at one instant.
package pause

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/permits"
)

// Table holds, per destination, the instant until which it asked not to
// be sent to. A destination is dropped once its pause has passed, so the
// table holds only destinations paused now. The zero Table is empty and
// ready; it is safe for concurrent use.
type Table struct {
	m sync.Map // destination -> *atomic.Int64, the end in Unix ns, or dropped
}

// dropped marks an entry that Check is taking out of the table: a pause
// written into it would be lost with it, so PauseAt finds or makes the
// destination's next entry instead.
const dropped = math.MinInt64

// Pause makes dest paused until at least until; an earlier end never
// shortens a later one.
func (t *Table) Pause(dest string, until time.Time) { t.PauseAt(dest, time.Time{}, until) }

// PauseAt is Pause, and reports whether it started a pause: dest was not
// paused at now and is after it (for a log line per pause, not one per
// response that extends it).
func (t *Table) PauseAt(dest string, now, until time.Time) (started bool) {
	end := until.UnixNano()
	for {
		v, _ := t.m.LoadOrStore(dest, new(atomic.Int64))
		p := v.(*atomic.Int64)
		cur := p.Load()
		for cur != dropped && cur < end && !p.CompareAndSwap(cur, end) {
			cur = p.Load()
		}
		switch {
		case cur == dropped:
			t.m.CompareAndDelete(dest, v) // help the drop along, then use the next entry
		case cur >= end:
			return false
		default:
			return cur <= now.UnixNano() && end > now.UnixNano()
		}
	}
}

// Until returns the end of dest's pause, if it is paused at now.
func (t *Table) Until(dest string, now time.Time) (time.Time, bool) {
	until, ok, _ := t.Check(dest, now)
	return until, ok
}

// Check is Until, and also returns the end of a pause that had passed by
// now, which this call dropped from the table: a pause's end is returned
// once, to one caller (for a log line), and is zero otherwise. The entry
// is marked dropped before it leaves the map, in one step with any pause
// written into it: a pause made meanwhile goes into the next entry.
func (t *Table) Check(dest string, now time.Time) (until time.Time, paused bool, ended time.Time) {
	v, ok := t.m.Load(dest)
	if !ok {
		return time.Time{}, false, time.Time{}
	}
	p := v.(*atomic.Int64)
	end := p.Load()
	if end > now.UnixNano() {
		return time.Unix(0, end), true, time.Time{}
	}
	if end != dropped && p.CompareAndSwap(end, dropped) {
		if end != 0 { // 0: an entry PauseAt made and has not written yet
			ended = time.Unix(0, end)
		}
	} else if end = p.Load(); end != dropped {
		// A pause came between the load and the mark: it stands.
		return t.Check(dest, now)
	}
	t.m.CompareAndDelete(dest, v)
	return time.Time{}, false, ended
}

// JitterAbove draws what is added to a wait of d: uniform on [0, spread],
// the spread a quarter of d, at least 100 ms and at most 5 s. Enough to
// spread the callers one wait stopped over a tenth of a second or more;
// never a large part of a long wait.
func JitterAbove(d time.Duration) time.Duration {
	spread := min(max(d/4, 100*time.Millisecond), 5*time.Second)
	return rand.N(spread + 1)
}

// Wait waits until until, plus jitter(the wait) more, from now: the wait a
// paused destination asks. A pause that ends after ctx's deadline fails
// at once, with the wait, as a limiter's refusal does (matching
// context.DeadlineExceeded and permits.ErrRateLimited); ctx ending first
// returns ctx.Err().
func Wait(ctx context.Context, now, until time.Time, jitter func(time.Duration) time.Duration) error {
	wait := until.Sub(now)
	wait += jitter(wait)
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
