package pooltable

import (
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/actor"
)

// Entry is one key's pool and the average time of its work, which the
// Shedders turn into the wait a refused caller is told.
type Entry struct {
	Key  string // the key, or Overflow for the shared pool
	Pool *actor.AdaptivePool
	// latency is a moving average (1/8 weight to each sample) in ns,
	// updated without a lock: two samples at once may lose one, which an
	// average shrugs off.
	latency atomic.Int64
}

// Observe adds one sample to the average; the first sets it.
func (e *Entry) Observe(d time.Duration) {
	old := e.latency.Load()
	if old == 0 {
		e.latency.Store(int64(d))
		return
	}
	e.latency.Store(old + (int64(d)-old)/8)
}

// Latency returns the average, 0 before any sample.
func (e *Entry) Latency() time.Duration { return time.Duration(e.latency.Load()) }
