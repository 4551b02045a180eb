package redislimit

// The state below the inbox has one holder at a time, named by tok: the
// owner goroutine, or nobody while the owner sleeps with nothing to do (no
// waiter, no slot due, no batch under way, no timer armed), or a caller
// that found it so. Such a caller runs one round itself (the direct path):
// it takes in its own request and whatever the inbox holds, makes the
// script call on its own goroutine, applies the answer and lets go. A lone
// caller then pays what one script call costs and no goroutine hand-off,
// like a limiter without an owner; callers that come meanwhile queue in
// the inbox as usual, and the owner takes over from there.
//
// Only callers whose context cannot be cancelled (TryAcquire, and Acquire
// with a context whose Done is nil) take it: a goroutine inside go-redis
// returns when go-redis does, which ignores the context unless the client
// has ContextTimeoutEnabled, so a cancellable caller goes through the owner
// and returns the moment it gives up.
//
// Hand-offs of the state go through tok, an atomic, so that whatever the
// last holder wrote is seen by the next:
//
//   - The owner lets go (stores tokFree) only when it holds nothing, and
//     then looks at the inbox again; a caller takes the state only by a CAS
//     from tokFree, after finding the inbox empty.
//   - A caller lets go by storing tokOwner when it leaves work (waiters,
//     slots, requests that came meanwhile), and wakes the owner; else it
//     stores tokFree and wakes the owner if the inbox holds anything.
//   - The owner, woken while a caller holds the state, sleeps on its wake
//     channel until that caller lets go: it never touches the state then.
//   - A call that outlives WithCallTimeout loses its batch to the timer,
//     which hands the state to the owner (tokOwner) and delivers the batch
//     as timed out; the caller, back from go-redis, finds the batch taken
//     and touches nothing but its own reply.
const (
	tokOwner int32 = iota
	tokFree
	tokCaller
)

// own makes the owner goroutine the holder of the state, unless a caller
// holds it.
func (e *engine) own() bool {
	for {
		switch e.tok.Load() {
		case tokOwner:
			return true
		case tokCaller:
			return false
		}
		if e.tok.CompareAndSwap(tokFree, tokOwner) {
			return true
		}
	}
}

// idleState reports whether the owner holds nothing that needs it awake.
func (e *engine) idleState() bool {
	return e.busy == nil && !e.armed && len(e.timed) == 0 && len(e.ready) == 0 && len(e.dirty) == 0
}

// letGo frees the state when the owner holds nothing, so that the next
// lone caller may take the direct path.
func (e *engine) letGo() {
	if e.idleState() && !e.closed.Load() {
		e.tok.Store(tokFree)
	}
}

// direct runs r's round on the caller's goroutine if the state is free,
// and reports whether it did. r's answer is then in its reply channel, or
// will come like any other (a reservation, or a call that timed out).
func (e *engine) direct(r *request) bool {
	if e.inbox.Load() != nil || e.tok.Load() != tokFree || !e.tok.CompareAndSwap(tokFree, tokCaller) {
		return false
	}
	if r.op == opAcquire {
		e.waiting.Add(1)
	}
	e.directs.Add(1)
	e.round(nil, r)
	if b := e.schedule(true); b != nil {
		if !e.execInline(b) {
			return true // the timer took the batch, and the state with it
		}
		e.calling.Store(false) // before looking at the inbox below
		e.busy = nil
		e.apply(b, e.now())
		e.schedule(false)
	}
	if e.idleState() && !e.closed.Load() {
		e.tok.Store(tokFree)
		if e.pending() {
			e.kick()
		}
		return true
	}
	e.tok.Store(tokOwner)
	e.kick()
	return true
}

// execInline makes b's calls on the calling goroutine and reports whether
// their answers count: false when WithCallTimeout ran out first, and the
// timer delivered b to the owner, handing it the state.
func (e *engine) execInline(b *batch) bool {
	return e.exec(b, true)
}
