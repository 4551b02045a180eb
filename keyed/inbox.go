package keyed

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/scheduler"
)

// A request reaches a shard's owner as in package actor (actor/inbox.go):
// a pooled call pushed with one CAS onto the shard's lock-free inbox, which
// the owner takes whole with one swap and reverses into arrival order, and
// a wake channel of capacity one. Cancellations travel on a second stack,
// taken before the inbox and handled first (see shard.batch); a request is
// still handled before its own cancellation, which marks it when both come
// in one take. Close sets closed before it wakes
// the owners, and a caller that reads closed false after its push knows the
// owner's last take of the inbox comes after it. Unlike actor's owner, a
// shard's owner is woken by every request: its timer may be armed for
// another key, so no arrival can count on being picked up by it.

type op uint8

const (
	opAcquire op = iota
	opTry
	opTune // SetRate or SetBurst: c.tune says which
)

type status uint8

const (
	stGranted  status = iota + 1
	stLimited         // refused; n holds RetryAfter
	stDeadline        // refused because the deadline is before the grant
	stClosed
	stCanceled
	stTooLarge // the cost no longer fits the key's capacity; n holds the capacity
)

// call is one caller's round trip: its request, its reply channel and its
// place in its key's queue. The owner writes the result before it signals
// reply; the caller reads it after.
type call[K comparable] struct {
	reply      chan struct{} // capacity 2: the answer, and a cancellation's acknowledgement
	node       scheduler.Node[*call[K]]
	next       *call[K]
	cancelNext *call[K]
	e          *entry[K]
	arrival    int64 // the caller's clock when it sent, ns on the timeline
	cancelAt   int64
	deadline   int64
	n          int64 // stGranted: the instant granted at; refusals: RetryAfter in ns
	remaining  int64 // the key's Remaining after the decision
	reset      int64 // ns from the decision until the key is full again
	nextUnit   int64 // ns from the decision until a unit comes back, when a window says (Decision.NextAt); else 0
	tune       *tuning
	op         op
	status     status
	hasDL      bool
	closer     bool // an Acquire that closed its key's gate before the owner (see attempt)
	inBatch    bool // owner: taken in the batch being served, not yet handled
	cancelled  bool // owner: its cancellation came in the same batch (see batch)
}

func (s *shard[K]) newCall(ctx context.Context, o op, e *entry[K], cost, at int64) *call[K] {
	c, _ := s.calls.Get().(*call[K])
	if c == nil {
		c = &call[K]{reply: make(chan struct{}, 2)}
		c.node.Value = c
	}
	c.status, c.op, c.e, c.tune, c.nextUnit = 0, o, e, nil, 0
	c.node.Cost, c.arrival = cost, at
	c.hasDL, c.closer = false, false
	if dl, ok := ctx.Deadline(); ok {
		c.hasDL, c.deadline = true, int64(dl.Sub(s.l.epoch))
	}
	return c
}

// send pushes c onto the inbox and wakes the owner.
func (s *shard[K]) send(c *call[K]) {
	for {
		top := s.inbox.Load()
		c.next = top
		if s.inbox.CompareAndSwap(top, c) {
			break
		}
	}
	s.kick()
}

func (s *shard[K]) sendCancel(c *call[K]) {
	c.cancelAt = s.l.stamp()
	for {
		top := s.cancels.Load()
		c.cancelNext = top
		if s.cancels.CompareAndSwap(top, c) {
			break
		}
	}
	s.kick()
}

func (s *shard[K]) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *shard[K]) pending() bool {
	return s.inbox.Load() != nil || s.cancels.Load() != nil || s.bornFlag.Load()
}

func (s *shard[K]) park(timerC <-chan time.Time) {
	select {
	case <-s.wake:
	case <-timerC:
		s.armed = false
	}
}

// take returns the cancellations and the requests pushed so far, each
// oldest first.
func (s *shard[K]) take() (cancels, arrivals *call[K]) {
	for c := s.cancels.Swap(nil); c != nil; {
		next := c.cancelNext
		c.cancelNext = cancels
		cancels, c = c, next
	}
	for c := s.inbox.Swap(nil); c != nil; {
		next := c.next
		c.next = arrivals
		arrivals, c = c, next
	}
	return cancels, arrivals
}

// roundTrip sends c and waits for its answer, cancelling it if ctx ends
// first. The caller then waits for the owner's acknowledgement, after which
// the owner never touches the call again, and only then pools it. The wait
// selects only on the caller's own channels; the shard's done channel only
// once the limiter is closed (actor/inbox.go has the argument).
func (s *shard[K]) roundTrip(ctx context.Context, c *call[K]) *call[K] {
	if c.op == opAcquire {
		s.l.waiting.Add(1) // before the owner can answer, which takes it back
	}
	s.send(c)
	var done <-chan struct{}
	if s.l.closed.Load() {
		done = s.done
	}
	ctxDone := ctx.Done()
	if ctxDone == nil && done == nil {
		<-c.reply
		return c
	}
	select {
	case <-c.reply:
		return c
	case <-ctxDone:
	case <-done:
		return s.poll(c)
	}
	s.sendCancel(c)
	if s.l.closed.Load() {
		done = s.done
	}
	select {
	case <-c.reply:
	case <-done:
		return s.poll(c)
	}
	if c.status != stCanceled {
		// The answer raced the cancellation and won; its acknowledgement
		// follows.
		select {
		case <-c.reply:
		case <-done:
			c.e = nil // the acknowledgement may still come: not pooled
		}
	}
	return c
}

// poll is for a caller that saw the owner exit: an answer may be in its
// channel. If none is, the owner never took the call and never will. The
// call is not pooled (done reports false), since the inbox may still hold
// it.
func (s *shard[K]) poll(c *call[K]) *call[K] {
	select {
	case <-c.reply:
	default:
		if c.op == opAcquire {
			s.l.waiting.Add(-1)
		}
		c.status = stClosed
	}
	c.e = nil // not pooled: see recycle
	return c
}

// recycle pools c once the caller has read its result, unless the owner
// may still touch it (poll, or an acknowledgement cut short by Close).
func (s *shard[K]) recycle(c *call[K]) {
	if c.e != nil {
		c.e = nil
		s.calls.Put(c)
	}
}
