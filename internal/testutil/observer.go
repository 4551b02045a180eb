package testutil

import (
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/permits"
)

// AtOnceObserver is a permits.AtOnceObserver that records what a limiter
// tells it: how often Waited was called, the count the limiter handed it
// to read (Read), and how often the limiter stopped that count.
type AtOnceObserver struct {
	Waits atomic.Int64 // calls of Waited
	Read  func() uint64
	Stops atomic.Int32
}

var _ permits.AtOnceObserver = (*AtOnceObserver)(nil)

// Waited counts the call.
func (o *AtOnceObserver) Waited(time.Duration) { o.Waits.Add(1) }

// CountAtOnce keeps read and returns a stop that counts its calls.
func (o *AtOnceObserver) CountAtOnce(read func() uint64) func() {
	o.Read = read
	return func() { o.Stops.Add(1) }
}
