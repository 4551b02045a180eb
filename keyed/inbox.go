package keyed

import (
	"context"

	"github.com/sluicehq/sluice/internal/owner"
	"github.com/sluicehq/sluice/scheduler"
)

// A request reaches a shard's owner through the core's inbox
// (internal/owner), as in package actor: a pooled call pushed with one CAS,
// taken in batches in arrival order, cancellations first, answered on the
// call's own reply channel. Unlike actor's owner, a shard's owner is woken
// by every request (each is prompt): its timer may be armed for another
// key, so no arrival can count on being picked up by it.

type op uint8

const (
	opAcquire op = iota
	opTry
	opTune // SetRate or SetBurst: c.tune says which
)

// status is a call's answer: the core's (internal/owner), and keyed's own
// from owner.Custom.
type status = owner.Status

const (
	stGranted  = owner.Granted
	stLimited  = owner.Limited  // refused; n holds RetryAfter
	stDeadline = owner.Deadline // refused because the deadline is before the grant
	stClosed   = owner.Closed
	stCanceled = owner.Canceled
	stTooLarge = owner.Custom // the cost no longer fits the key's capacity; n holds the capacity
)

// call is one caller's round trip: its request, its reply channel and its
// place in its key's queue. The owner writes the result before it signals
// reply; the caller reads it after.
type call[K comparable] struct {
	owner.Call[*call[K]] // the reply channel, the inbox's links, the status
	node                 scheduler.Node[*call[K]]
	e                    *entry[K]
	arrival              int64 // the caller's clock when it sent, ns on the timeline
	deadline             int64
	n                    int64 // stGranted: the instant granted at; refusals: RetryAfter in ns
	remaining            int64 // the key's Remaining after the decision
	reset                int64 // ns from the decision until the key is full again
	nextUnit             int64 // ns from the decision until a unit comes back, when a window says (Decision.NextAt); else 0
	tune                 *tuning
	op                   op
	hasDL                bool
	closer               bool // an Acquire that closed its key's gate before the owner (see attempt)
}

func (s *shard[K]) newCall(ctx context.Context, o op, e *entry[K], cost, at int64) *call[K] {
	c, _ := s.calls.Get().(*call[K])
	if c == nil {
		c = new(call[K])
		c.Init(c)
		c.node.Value = c
	}
	c.Status, c.op, c.e, c.tune, c.nextUnit = owner.Pending, o, e, nil, 0
	c.node.Cost, c.arrival = cost, at
	c.hasDL, c.closer = false, false
	if dl, ok := ctx.Deadline(); ok {
		c.hasDL, c.deadline = true, int64(dl.Sub(s.l.epoch))
	}
	return c
}

// roundTrip sends c and waits for its answer (owner.RoundTrip). A call
// the owner may still touch is not pooled (see recycle): its entry is
// cleared.
func (s *shard[K]) roundTrip(ctx context.Context, c *call[K]) *call[K] {
	if c.op == opAcquire {
		s.l.waiting.Add(1) // before the owner can answer, which takes it back
	}
	switch s.o.RoundTrip(ctx, &c.Call, true) {
	case owner.Unanswered:
		if c.op == opAcquire {
			s.l.waiting.Add(-1) // the owner never took it
		}
		c.e = nil
	case owner.Orphaned:
		c.e = nil
	}
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
