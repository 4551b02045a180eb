package actor

import (
	"context"

	"github.com/sluicehq/sluice/internal/owner"
)

// Every request reaches the owner through the core's inbox
// (internal/owner): a pooled call pushed with one CAS, taken in batches in
// arrival order, answered on the call's own reply channel. What is the
// actor's is which requests need a prompt answer: an arrival that needs
// none (no deadline, no WithMaxWait or WithMaxQueue) does not wake an owner
// that sleeps with its timer armed, since it cannot be granted before the
// head, and the owner takes the inbox when the timer fires. Once a limiter
// has lanes every arrival is prompt: a newcomer in another lane may go
// before the head.

// roundTrip sends c, waits for its answer (owner.RoundTrip) and returns
// the call to the pool unless the owner may still touch it.
func (r *runtime) roundTrip(ctx context.Context, c *call, prompt bool) result {
	if c.op == opAcquire {
		// Counted by the caller, from before its request can be seen to
		// the moment it returns: exact whenever nobody is in between.
		r.waiting.Add(1)
		defer r.waiting.Add(-1)
	}
	out := r.o.RoundTrip(ctx, &c.Call, prompt)
	res := c.result()
	if out == owner.Answered {
		r.calls.Put(c)
	}
	return res
}

// newCallFor takes a call from the pool and fills in the request.
func (r *runtime) newCallFor(ctx context.Context, o op, cost, at int64, wantRc bool) *call {
	c := r.calls.Get().(*call)
	c.Status, c.op, c.wantRc, c.wantQuota = owner.Pending, o, wantRc, false // a pooled call keeps its last answer
	c.lane, c.probe = nil, false
	c.node.Cost, c.arrival = cost, at
	c.Units = 0
	if o == opAcquire {
		c.Units = cost // counted in the inbox until taken (Limiter.behind)
	}
	c.hasDL = false
	if dl, ok := ctx.Deadline(); ok {
		c.hasDL, c.deadline = true, int64(dl.Sub(r.epoch))
	}
	return c
}
