package actor

// close sets closed, wakes the owner and waits for it to exit. The order
// matters (inbox.go): closed first, so that a caller that reads it false
// after pushing its request knows the owner's last take of the inbox comes
// after the push.
func (r *runtime) close() {
	r.once.Do(func() {
		r.closed.Store(true)
		r.kick() // even if it looks awake: the token makes its next park return
	})
	<-r.done
}

// shutdown fails every waiter and every request still in the inbox with
// ErrClosed, and acknowledges cancellations, so that no caller waits on an
// owner that is gone. The lock-free paths see closed before they look at
// the state, and refuse.
func (r *runtime) shutdown() {
	if r.timer != nil {
		r.timer.Stop()
	}
	r.armed = false
	r.expiry.clear()
	for c := r.popAny(); c != nil; c = r.popAny() {
		r.reply(c, stClosed, 0)
	}
	cancels, arrivals := r.take()
	for c := arrivals; c != nil; {
		next := c.next
		r.reply(c, stClosed, 0)
		c = next
	}
	for c := cancels; c != nil; {
		next := c.cancelNext
		c.reply <- struct{}{} // the acknowledgement: every request has its answer
		c = next
	}
	r.state.Store(stIdle)
}
