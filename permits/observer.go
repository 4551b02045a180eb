package permits

import (
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// An Observer is told what a limiter's Stats cannot say: how long each
// granted Acquire waited. It is the one seam through which sluice's
// limiters report to an observer (docs/observability.md); counters and the
// waiting gauge are read from Stats, when the observer collects.
//
// A limiter made without one (WithObserver in actor and keyed) calls
// nothing and pays nothing. One made with one calls Waited on the caller's
// goroutine as each granted Acquire returns, with 0 for an Acquire granted
// at once (unless the observer counts those itself: AtOnceObserver): Waited
// must be fast and safe for concurrent use. WaitHistogram is one.
type Observer interface {
	Waited(d time.Duration)
}

// An AtOnceObserver is an Observer that counts the Acquires granted at
// once without being told of each one: where those are most of the calls
// (a limiter with room, a pool with free slots), a call per grant would be
// most of what observing costs. A limiter made with one (actor's and
// keyed's) counts them itself, in the counter its Stats already keep on the
// fast path, calls Waited only for the Acquires its owner granted, and
// hands the observer a function that reads its count. WaitHistogram is one.
type AtOnceObserver interface {
	Observer
	// CountAtOnce makes read, which returns how many Acquires a limiter
	// has granted at once so far (a count that never goes down), part of
	// the observer's count of zero waits. It returns the function the
	// limiter calls when it closes: the observer keeps the count as it
	// stands and stops calling read, so that a closed limiter is not kept
	// alive by it. An Acquire granted at the very moment of Close may be
	// missed.
	CountAtOnce(read func() uint64) (stop func())
}

// WaitBuckets is the number of buckets of a WaitHistogram: bucket 0 counts
// waits of at most 1µs, bucket i waits of at most 2^i µs (2^32 µs, about
// 71.6 minutes, for the last but one: a pause for a long Retry-After still
// lands in a bucket of its own size), and the last every longer wait.
const WaitBuckets = 34

// A WaitHistogram counts waits into fixed exponential buckets with atomic
// adds: an Observer that costs a few nanoseconds per granted Acquire and
// never allocates, read at collection time by Snapshot (sluiceotel and
// sluiceprom export it). Its zero value is ready to use; it must not be
// copied after first use.
type WaitHistogram struct {
	// zero counts the waits of bucket 0 that Waited is told of (an
	// Acquire granted at once by a limiter that does not count those
	// itself, a Transport's attempt that was not paced): one word would be
	// a cache line every core fights over on every such call, so the adds
	// spread over padded shards (as actor's counters do), summed when read.
	zero [zeroShards]struct {
		n atomic.Uint64
		_ [56]byte
	}
	counts [WaitBuckets]atomic.Uint64 // from bucket 1 on
	sum    atomic.Int64               // ns, saturating at math.MaxInt64

	// The limiters' counts of Acquires granted at once (CountAtOnce),
	// read into bucket 0, and what those of closed limiters left.
	mu     sync.Mutex
	atOnce []*func() uint64
	closed uint64
}

var _ AtOnceObserver = (*WaitHistogram)(nil)

const zeroShards = 8

// Waited counts one wait of d (a negative d counts as 0).
func (h *WaitHistogram) Waited(d time.Duration) {
	i := waitBucket(d)
	if i == 0 {
		// The shard of the calling goroutine's stack region: distinct
		// goroutines mostly land on distinct shards.
		var local byte
		h.zero[uintptr(unsafe.Pointer(&local))>>13%zeroShards].n.Add(1)
		if d <= 0 {
			return
		}
	} else {
		h.counts[i].Add(1)
	}
	if h.sum.Add(int64(d)) < 0 {
		h.sum.Store(math.MaxInt64) // a sum past 292 years stays there
	}
}

// CountAtOnce adds what read returns to bucket 0 at each Snapshot, until
// stop is called (see AtOnceObserver). A nil read counts nothing.
func (h *WaitHistogram) CountAtOnce(read func() uint64) (stop func()) {
	if read == nil {
		return func() {}
	}
	src := &read
	h.mu.Lock()
	h.atOnce = append(h.atOnce, src)
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.closed += read()
			h.atOnce = slices.DeleteFunc(h.atOnce, func(f *func() uint64) bool { return f == src })
		})
	}
}

// waitBucket is the bucket of d: the least i with d ≤ 2^i µs.
func waitBucket(d time.Duration) int {
	if d <= time.Microsecond {
		return 0
	}
	us := uint64(d-1) / uint64(time.Microsecond) // d ≤ 2^i µs ⇔ (d-1)/1µs < 2^i
	return min(bits.Len64(us), WaitBuckets-1)
}

// A WaitSnapshot is what a WaitHistogram counted, read bucket by bucket:
// concurrent waits may land between two reads, so Count is the sum of
// Counts as read, and Sum was read after them.
type WaitSnapshot struct {
	// Bounds[i] is the upper bound of bucket i, inclusive; the last
	// bucket has no bound and is not in Bounds.
	Bounds [WaitBuckets - 1]time.Duration
	Counts [WaitBuckets]uint64
	Count  uint64
	Sum    time.Duration
}

// Snapshot reads h's counts.
func (h *WaitHistogram) Snapshot() WaitSnapshot {
	var s WaitSnapshot
	for i := range s.Bounds {
		s.Bounds[i] = time.Microsecond << i
	}
	for i := range h.zero {
		s.Counts[0] += h.zero[i].n.Load()
	}
	h.mu.Lock()
	s.Counts[0] += h.closed
	for _, read := range h.atOnce {
		s.Counts[0] += (*read)()
	}
	h.mu.Unlock()
	for i := 1; i < WaitBuckets; i++ {
		s.Counts[i] = h.counts[i].Load()
	}
	for _, n := range s.Counts {
		s.Count += n
	}
	s.Sum = time.Duration(h.sum.Load())
	return s
}
