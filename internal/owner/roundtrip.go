package owner

import "context"

// Outcome says what a round trip left its call as.
type Outcome uint8

const (
	// Answered: the caller has its answer and the owner will never touch
	// the call again; it may be pooled.
	Answered Outcome = iota
	// Orphaned: the caller has its answer, but the owner exited before it
	// acknowledged a cancellation, so the inbox may still hold the call:
	// it must not be pooled.
	Orphaned
	// Unanswered: the owner exited without answering; Status is Closed and
	// the call must not be pooled.
	Unanswered
)

// RoundTrip sends c and waits for its answer, cancelling it if ctx ends
// first. Cancellation is a message too: the caller waits for the owner's
// acknowledgement, after which the owner will never touch the call again.
// prompt is Send's.
//
// The wait selects only on the caller's own channels: no select touches a
// channel every caller shares, whose lock would serialise them. Done is
// watched only once closed is seen, which the order Stop keeps makes safe
// (inbox.go).
func (o *Owner[C]) RoundTrip(ctx context.Context, c *Call[C], prompt bool) Outcome {
	o.Send(c, prompt)
	var done <-chan struct{} // nil: the answer is sure to come
	if o.closed.Load() {
		done = o.done
	}
	ctxDone := ctx.Done()
	if ctxDone == nil && done == nil {
		<-c.Reply // nothing can interrupt: a plain receive, no select
		return Answered
	}
	select {
	case <-c.Reply:
		return Answered
	case <-ctxDone:
	case <-done:
		return poll(c)
	}
	o.sendCancel(c)
	if o.closed.Load() {
		done = o.done
	}
	select {
	case <-c.Reply:
	case <-done:
		return poll(c)
	}
	if c.Status != Canceled {
		// The answer raced the cancellation and won; its acknowledgement
		// follows.
		select {
		case <-c.Reply:
		case <-done:
			return Orphaned
		}
	}
	return Answered
}

// poll is for a caller that saw the owner exit: an answer may be in its
// channel. If none is, the owner never took the call and never will.
func poll[C any](c *Call[C]) Outcome {
	select {
	case <-c.Reply:
		return Orphaned
	default:
		c.Status = Closed
		return Unanswered
	}
}
