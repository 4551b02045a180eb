package actor

import "github.com/sluicehq/sluice/internal/owner"

// close stops the owner and waits for it to exit (owner.Stop keeps the
// order that lets no caller miss its answer).
func (r *runtime) close() {
	r.o.Stop()
	<-r.o.Done()
	if r.stopAtOnce != nil {
		r.stopOnce.Do(r.stopAtOnce)
	}
}

// Shutdown fails every waiter and every request still in the inbox with
// ErrClosed; the core then acknowledges the cancellations, so that no
// caller waits on an owner that is gone. The lock-free paths see closed
// before they look at the state, and refuse.
func (r *runtime) Shutdown(left *owner.Call[*call]) {
	r.expiry.clear()
	for c := r.popAny(); c != nil; c = r.popAny() {
		r.reply(c, stClosed, 0)
	}
	for c := left; c != nil; {
		next := c.Next() // read first: once answered, c is its caller's
		r.reply(c.Self, stClosed, 0)
		c = next
	}
	r.state.Store(stIdle)
}
