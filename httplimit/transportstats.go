package httplimit

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/permits"
)

// What a Transport counts (Stats): atomic counters of fixed number, added
// to on the paths that make the event, so that a request allocates nothing
// for them and the Transport's memory does not grow with its traffic.

// TransportStats is what a Transport has done since it was made, and the
// hosts it holds paused now. The counters are read one by one, not as one
// snapshot: a Stats taken while requests flow may see one counter of an
// instant and the next of a later one.
type TransportStats struct {
	Requests int64 // RoundTrip calls
	Attempts int64 // requests sent through the base RoundTripper
	// Paced counts the attempts that waited more than 1µs (the first
	// bucket of a permits.WaitHistogram) for their host's pause, the
	// limiter and their host's pool before they went on to be sent: the
	// waits WithObserver is told of, less those granted at once.
	Paced           int64
	Retries         int64 // retries decided (each followed by an attempt, unless the context ended)
	RefusedRetries  int64 // RoundTrips whose retry the retry budget refused (WithBudget)
	BreakerRejected int64 // attempts the circuit breaker refused, never sent (WithBreaker)
	Throttled       int64 // 429 responses received
	Unavailable     int64 // 5xx responses of a retried status received (502, 503, 504, 529)
	Pauses          int64 // responses that paused their host (or the limiter), extensions included
	Capped          int64 // of which asked for longer than the pause cap
	Settled         int64 // permits settled with the cost read from their response
	SettleFails     int64 // settlements the limiter refused (see permits.Settle)
	// PausesStarted counts the pauses of a host that a response started
	// (one that extends a pause under way starts none), by the status
	// that asked. With WithPauseLimiter, the limiter carries the pauses
	// and each response that paused it counts.
	PausesStarted PauseCounts
	// Responses counts the responses received from the base, retried ones
	// included, by class: Responses[2] counts the 2xx, Responses[5] the
	// 5xx; Responses[0] counts statuses outside 100–599.
	Responses [6]int64
	// PausedHosts is a gauge: the hosts paused now (0 with
	// WithPauseLimiter, whose pauses are the limiter's).
	PausedHosts int64
}

// PauseCounts are pauses by the status of the response that asked for
// them.
type PauseCounts struct {
	TooManyRequests    int64 // 429
	ServiceUnavailable int64 // 503
	Other              int64 // any other retried status with a wait (502, 504, 529...)
}

// Stats returns the counters, and counts the hosts paused now: a range
// over the hosts whose pause started and has not been seen to end, which
// drops those whose pause has passed. Safe for concurrent use.
func (t *Transport) Stats() TransportStats {
	n := &t.n
	st := TransportStats{
		Requests: n.requests.Load(), Attempts: n.attempts.Load(), Paced: n.paced.Load(),
		Retries: n.retries.Load(), RefusedRetries: n.refusedRetries.Load(),
		BreakerRejected: n.breakerRejected.Load(), Throttled: n.throttled.Load(),
		Unavailable: n.unavailable.Load(), Pauses: n.pauses.Load(), Capped: n.capped.Load(),
		Settled: n.settled.Load(), SettleFails: n.settleFails.Load(),
		PausesStarted: PauseCounts{TooManyRequests: n.started[0].Load(),
			ServiceUnavailable: n.started[1].Load(), Other: n.started[2].Load()},
		PausedHosts: t.paused.count(time.Now()),
	}
	for i := range st.Responses {
		st.Responses[i] = n.responses[i].Load()
	}
	return st
}

type counters struct {
	requests, attempts, paced, retries, refusedRetries, breakerRejected atomic.Int64
	throttled, unavailable, pauses, capped, settled, settleFails        atomic.Int64
	started                                                             [3]atomic.Int64 // PauseCounts, in its order
	responses                                                           [6]atomic.Int64
}

// WithObserver tells o how long each attempt waited before it went on to
// be sent: for its host's pause (a 429's Retry-After), for the limiter
// (the pacing) and for its host's pool (WithAdaptiveConcurrency), 0 for
// an attempt that found all three free. o is called on RoundTrip's
// goroutine, once per attempt that was granted all three, and must be
// fast and safe for concurrent use: a permits.WaitHistogram is one, read
// by sluiceotel's WaitProducer and sluiceprom's Waits. nil, the default,
// calls nothing. Stats.Paced counts the same waits, less those of at most
// 1µs, with or without an observer.
func WithObserver(o permits.Observer) TransportOption {
	return transportOption(func(c *transportConfig) { c.observer = o })
}

// waited records that an attempt waited d before it was sent.
func (t *Transport) waited(d time.Duration) {
	if d > time.Microsecond {
		t.n.paced.Add(1)
	}
	if t.observer != nil {
		t.observer.Waited(d)
	}
}

// responded counts a response of status code by its class.
func (n *counters) responded(code int) {
	class := code / 100
	if code < 100 || class > 5 {
		class = 0
	}
	n.responses[class].Add(1)
}

// pauseStarted counts a pause started by a response of status code.
func (n *counters) pauseStarted(code int) {
	switch code {
	case 429:
		n.started[0].Add(1)
	case 503:
		n.started[1].Add(1)
	default:
		n.started[2].Add(1)
	}
}

// pausedHosts is the end of each host's pause (Unix ns), for the gauge of
// hosts paused now: internal/pause's Table answers for one host, and
// cannot be counted. The values are plain int64s, so that a
// CompareAndDelete of an end that has passed never drops a pause that a
// concurrent response has just extended (it changed the value). It holds
// what the Table holds, no more: an entry is dropped when a request finds
// its pause over, or when Stats does.
type pausedHosts struct{ m sync.Map }

// pause makes host paused until at least until (Unix ns).
func (p *pausedHosts) pause(host string, until int64) {
	for {
		old, loaded := p.m.LoadOrStore(host, until)
		if !loaded || old.(int64) >= until || p.m.CompareAndSwap(host, old, until) {
			return
		}
	}
}

// forget drops host if its pause is over at now.
func (p *pausedHosts) forget(host string, now time.Time) {
	if v, ok := p.m.Load(host); ok && v.(int64) <= now.UnixNano() {
		p.m.CompareAndDelete(host, v)
	}
}

// count returns the hosts paused at now, and drops the others.
func (p *pausedHosts) count(now time.Time) int64 {
	var n int64
	p.m.Range(func(host, end any) bool {
		if end.(int64) > now.UnixNano() {
			n++
		} else {
			p.m.CompareAndDelete(host, end)
		}
		return true
	})
	return n
}
