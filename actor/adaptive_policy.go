package actor

import (
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/scheduler"
)

// The adaptive pool's word packs what the fast path decides on, so that
// one CAS sees the count and the limit together and a lowered limit is
// never passed by an admission that read the old one:
//
//	bit 63       the gate: waiters are queued, the fast path is closed
//	bits 32..62  the limit
//	bits 0..31   units in flight (at most the highest limit ever set)
//
// A release subtracts from the low bits alone: they hold at least what is
// released, so no borrow reaches the limit.
const (
	adGate      = uint64(1) << 63
	adShift     = 32
	adCount     = uint64(1)<<adShift - 1
	adLimits    = ^adGate &^ adCount
	maxCeiling  = int64(1)<<31 - 1
	sampleEvery = time.Millisecond // how long samples gather before the owner decides on them
)

func adInFlight(w uint64) int64 { return int64(w & adCount) }
func adLimit(w uint64) int64    { return int64(w & adLimits >> adShift) }

// adaptivePolicy is a pool whose size is the limit in its word, moved by a
// controller on the owner goroutine. Any goroutine may add units while the
// gate is open and the limit allows, and give units back at any time; only
// the owner adds units while it is closed, sets the limit and opens and
// closes the gate.
type adaptivePolicy struct {
	word atomic.Uint64
	_    [56]byte // each line below is written by other hands than the next

	// read-mostly: every Acquire reads them
	floor, ceiling int64
	ctl            Controller
	mask           atomic.Uint32 // stride−1: one grant in stride is stamped (restride)
	_              [28]byte

	ring sampleRing // reported outcomes, on their way to the owner

	// owned by the loop
	due      int64 // when the gathered samples are decided on; 0: none gathered
	lostSeen int64 // ring.lost at the last drain

	// counted by the loop, read by Stats
	nSamples, nSignals, nChanges atomic.Int64
}

// take adds cost if the gate is open and it fits under the limit. open
// reports whether the gate was open; w is the word it decided on.
func (q *adaptivePolicy) take(cost int64) (ok, open bool, w uint64) {
	for {
		w = q.word.Load()
		if w&adGate != 0 {
			return false, false, w
		}
		if adInFlight(w)+cost > adLimit(w) {
			return false, true, w
		}
		if q.word.CompareAndSwap(w, w+uint64(cost)) {
			return true, true, w + uint64(cost)
		}
	}
}

// admit is poolPolicy.admit on the packed word: a denial of a request that
// will wait closes the gate in the CAS that observed the count.
func (q *adaptivePolicy) admit(_, cost int64, wait bool) (bool, int64) {
	for {
		w := q.word.Load()
		if adInFlight(w)+cost <= adLimit(w) {
			if q.word.CompareAndSwap(w, w+uint64(cost)) {
				return true, 0
			}
			continue
		}
		if !wait || w&adGate != 0 || q.word.CompareAndSwap(w, w|adGate) {
			return false, 0
		}
	}
}

func (q *adaptivePolicy) decide(_, cost int64) (bool, int64) { return q.admit(0, cost, false) }

func (q *adaptivePolicy) predict(*scheduler.Queue[*call], int64, int64, int64, bool) (int64, bool) {
	return 0, false
}

func (q *adaptivePolicy) queued(int64, int64)          {}
func (q *adaptivePolicy) dropped()                     {}
func (q *adaptivePolicy) removed()                     {}
func (q *adaptivePolicy) tail() (int64, bool)          { return 0, false }
func (q *adaptivePolicy) receipt() algorithms.Receipt  { return algorithms.Receipt{} }
func (q *adaptivePolicy) admitted(at, now int64) int64 { return max(at, now) }
func (q *adaptivePolicy) quota() (int64, int64)        { return -1, 0 }

func (q *adaptivePolicy) idle() {
	for {
		w := q.word.Load()
		if w&adGate == 0 || q.word.CompareAndSwap(w, w&^adGate) {
			return
		}
	}
}

// setLimit replaces the limit, keeping the count and the gate.
func (q *adaptivePolicy) setLimit(l int64) {
	for {
		w := q.word.Load()
		if adLimit(w) == l || q.word.CompareAndSwap(w, w&^adLimits|uint64(l)<<adShift) {
			return
		}
	}
}

// tick is the controller's turn (runtime.Schedule): samples gather for
// sampleEvery from the poke of the first, so that a busy pool wakes its
// owner about once a millisecond, not once a release; then the controller
// sees each, in the order reported, and the limit it settles on is
// published in the word, before the heads are served.
func (q *adaptivePolicy) tick(now int64) int64 {
	if q.due == 0 {
		if q.ring.empty() {
			return 0
		}
		q.due = now + int64(sampleEvery)
	}
	if now < q.due {
		return q.due
	}
	q.due = 0
	limit, n := adLimit(q.word.Load()), int64(0)
	if q.ring.take(func(c *sampleCell) {
		if n++; c.outcome != Dropped { // a Dropped cell only counts for the stride
			limit = q.update(c, limit)
		}
	}) {
		q.due = now + int64(sampleEvery) // a producer is writing its cell: come back for it
	}
	q.setLimit(limit)
	lost := q.ring.lost.Load()
	q.restride(n + lost - q.lostSeen) // the lost ones stood for requests too
	q.lostSeen = lost
	return q.due
}

// Latency sampling. A controller decides on about 8 fresh samples a round
// trip; a busy pool completes thousands, and each latency costs two clock
// reads (about 28 ns each on the machine of docs/benchmarks.md) and a cell
// of the ring. So once a drain finds more than sampleTarget samples, only
// one grant in stride (a power of two, at most maxStride) is stamped,
// each slot's grants counted from a random phase: the others report load
// signals but no latency.
const (
	sampleTarget = 64
	maxStride    = 256
)

// restride sets the stride from the n samples of the last drain: at
// stride s they stand for about n·s requests.
func (q *adaptivePolicy) restride(n int64) {
	total := n * int64(q.mask.Load()+1)
	stride := int64(1)
	for stride < maxStride && total/(stride*2) >= sampleTarget {
		stride *= 2
	}
	if m := uint32(stride - 1); q.mask.Load() != m {
		// Stored only when it moves: every grant reads mask, and its line
		// (floor, ceiling, ctl) would otherwise travel to every core
		// after each drain, a millisecond apart.
		q.mask.Store(m)
	}
}

// sampled reports whether the grant on slot s is to be stamped: one in
// stride of the slot's grants, at a phase drawn when the slot was made.
// A slot belongs to one goroutine from its grant to its end, so its count
// needs no atomic, and a count costs a tenth of drawing a random number
// per grant (7% of Acquire plus Done at 64 goroutines).
func (q *adaptivePolicy) sampled(s *adSlot) bool {
	s.grants++
	m := q.mask.Load()
	return m == 0 || s.grants&m == 0
}

// update tells the controller of one sample and clamps its answer.
func (q *adaptivePolicy) update(c *sampleCell, limit int64) int64 {
	smp := Sample{Outcome: c.outcome, RTT: time.Duration(c.done - c.granted),
		InFlight: c.inFlight, At: time.Duration(c.done)}
	q.nSamples.Add(1)
	if smp.overloaded() {
		q.nSignals.Add(1)
	}
	l := min(max(q.ctl.Update(smp, limit), q.floor), q.ceiling)
	if l != limit {
		q.nChanges.Add(1)
	}
	return l
}

// adSlot is a permit's token and what its pool records of its grant.
// Every grant and end writes it (the token's generation, the stamps, the
// count), so it fills whole pairs of cache lines of its own: at 72 bytes,
// slots in use on different cores shared lines, and each write took the
// line from the other core. The pad is computed from the fields, so that
// the slot is a multiple of 128 bytes (a size class aligned to it) on
// every platform, 32-bit ones included.
type adSlot struct {
	adSlotFields
	_ [128 - unsafe.Sizeof(adSlotFields{})%128]byte
}

type adSlotFields struct {
	tok      permits.Token
	granted  int64 // ns on the pool's timeline
	inFlight int64
	pool     *AdaptivePool // the pool whose token it is
	grants   uint32        // grants on this slot, from a random phase (sampled)
}

// tick runs the policy's own work, if it has any (adaptivePolicy.tick).
func (r *runtime) tick(now int64) int64 {
	if t, ok := r.pol.(*adaptivePolicy); ok {
		return t.tick(now)
	}
	return 0
}
