package permits_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/permits"
)

// The Acquires a limiter granted at once, which it counts itself, are read
// into bucket 0 at each Snapshot, beside the zero waits Waited was told of;
// Count and Sum follow.
func TestTheCountsOfAtOnceGrantsAreReadIntoTheZeroBucket(t *testing.T) {
	var h permits.WaitHistogram
	var a, b atomic.Uint64
	stopA := h.CountAtOnce(a.Load)
	defer h.CountAtOnce(b.Load)()
	defer stopA()
	a.Store(5)
	b.Store(7)
	h.Waited(0)
	s := h.Snapshot()
	assert.Equal(t, uint64(13), s.Counts[0])
	assert.Equal(t, uint64(13), s.Count)
	assert.Zero(t, s.Sum)
	a.Add(2)
	assert.Equal(t, uint64(15), h.Snapshot().Counts[0], "read again at each Snapshot")
}

// Once a limiter stops, the histogram keeps its count as it stood and no
// longer calls its read, so that counts stay cumulative and the limiter is
// not kept alive; a second stop changes nothing.
func TestAStoppedCountIsKeptAndNoLongerRead(t *testing.T) {
	var h permits.WaitHistogram
	var n atomic.Uint64
	var reads atomic.Int32
	stop := h.CountAtOnce(func() uint64 { reads.Add(1); return n.Load() })
	n.Store(4)
	stop()
	n.Store(100)
	before := reads.Load()
	assert.Equal(t, uint64(4), h.Snapshot().Counts[0])
	stop()
	assert.Equal(t, uint64(4), h.Snapshot().Counts[0], "a second stop does not count again")
	assert.Equal(t, before, reads.Load(), "a stopped count is not read")
}

// A nil read counts nothing, and its stop is harmless.
func TestANilAtOnceCountCountsNothing(t *testing.T) {
	var h permits.WaitHistogram
	h.CountAtOnce(nil)()
	assert.Zero(t, h.Snapshot().Count)
}
