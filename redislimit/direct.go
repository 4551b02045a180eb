package redislimit

import "time"

// The state below the inbox has one holder at a time, named by tok: the
// owner goroutine, or nobody while the owner sleeps with nothing to do (no
// waiter, no slot due, no batch under way, no timer armed), or a caller
// that found it so. Such a caller runs one round itself (the direct path):
// it takes in its own request and whatever the inbox holds, makes the
// script call on its own goroutine, applies the answer and lets go. A lone
// caller then pays what one script call costs and no goroutine hand-off,
// like a limiter without an owner; callers that come meanwhile queue in
// the inbox as usual, and the owner takes over from there. A round that
// leaves a waiter reserved (slots nobody held, from an earlier call, dealt
// to the requests it took in) hands its call to a worker instead and arms
// the owner's timer (schedule): a slow call must not hold that grant back.
//
// Not on a Cluster: while its call is under way the caller holds the
// state, and a call to a hung master would hold up the keys of every
// other master until its timeout.
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
//     channel until that caller lets go, or until the deadline of the
//     caller's call (watch): it never touches the state then.
//   - A call that outlives WithCallTimeout loses its batch to the owner
//     (watch), if something woke it meanwhile, or to the caller itself,
//     back from go-redis: either hands the state to the owner (tokOwner)
//     and delivers the batch as timed out, and a caller that finds its
//     batch taken touches nothing but its own reply.
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
	return e.nbusy == 0 && !e.armed && len(e.timed) == 0 && len(e.ready) == 0 && len(e.dirty) == 0
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
	if e.router != nil || e.inbox.Load() != nil || e.tok.Load() != tokFree || !e.tok.CompareAndSwap(tokFree, tokCaller) {
		return false
	}
	if r.op == opAcquire {
		e.waiting.Add(1)
	}
	switch e.lone(r) {
	case loneGone:
		return true // the batch timed out: the owner has it, and the state
	case loneNot:
		took := e.round(nil, r)
		if b := e.schedule(onCallerInline); b != nil {
			if !e.execInline(b, took) {
				return true // as above
			}
			e.answer(b)
		}
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

// answer applies the answer of the batch a caller made on the direct
// path, and deals with what it leaves.
func (e *engine) answer(b *batch) {
	e.calling.Store(false) // before looking at the inbox (direct)
	e.end(b)
	e.apply(b, e.now())
	e.schedule(onCaller)
}

// What lone did.
const (
	loneNot  = iota // nothing: the request goes the general way
	loneDone        // it made r's call and applied the answer
	loneGone        // it made r's call, which timed out: the owner has it, and the state
)

// lone makes the call of a lone GCRA request on the direct path, for a key
// this process holds nothing for (no waiter, no slot, no refund), with
// the least work on the caller's goroutine: the call is r's alone, and an
// answer that grants it now or refuses it needs no slot, no line and no
// timer. A reservation ahead, an error or a timeout goes through apply, as
// any answer does. On a small machine the caller's Go work around the call
// runs cold (the goroutine wakes from the network poller after Redis has
// had the CPU), so every step spared shows in a lone caller's latency.
func (e *engine) lone(r *request) int {
	if e.win != nil || e.cancels.Load() != nil || (r.op != opAcquire && r.op != opTry) {
		return loneNot
	}
	now := e.now()
	ks, n := e.loneKey(r, now)
	if ks == nil {
		return loneNot
	}
	r.ks, r.phase = ks, phInflight
	ks.line = append(ks.line, r)
	ks.inflight = true
	if r.op == opAcquire {
		ks.acquires++
	}
	kc := &keyCall{ks: ks, reqs: ks.line[:1:1], lean: true, args: e.loneArgs(r, ks.floorAt(now), now)}
	b := &batch{node: n, keys: []*keyCall{kc}}
	e.begin(b)
	if !e.execInline(b, false) {
		return loneGone
	}
	code := int64(0)
	if kc.err == nil {
		code = kc.codes[0]
	}
	if code == 0 || code > kc.now {
		e.answer(b) // an error, or a reservation ahead
		return loneDone
	}
	e.loneAnswered(b, kc, r, code, now)
	return loneDone
}

// loneKey returns r's key for a lone call, and the node that serves it:
// nil when the key has requests of its own or its node is out of reach.
func (e *engine) loneKey(r *request, now int64) (*keyState, *node) {
	ks := e.one
	if ks == nil {
		ks = e.keys[r.key]
	}
	if ks != nil && !ks.idle() {
		return nil, nil
	}
	if ks == nil {
		ks = e.key(r.key)
	}
	n := e.nodeOf(ks, now)
	if !n.reachable(e, now) {
		return nil, nil
	}
	if e.keep {
		e.one = ks
	}
	return ks, n
}

// loneAnswered answers r, granted or refused at Redis's instant code (µs,
// its magnitude), on the caller's goroutine: nothing of its key is left
// at the owner.
func (e *engine) loneAnswered(b *batch, kc *keyCall, r *request, code, now int64) {
	ks := kc.ks
	e.calling.Store(false)
	e.end(b)
	e.cameBack(b.node, now)
	e.rtt = max(b.r-b.s, 0)
	ks.inflight = false
	clear(ks.line)
	ks.line = ks.line[:0]
	e.gaveBack(kc) // the key's value after the call (kc gives nothing back)
	ks.off = b.r - kc.now*1000
	if code < 0 {
		e.refuse(ks, r, code, kc.now)
	} else {
		ks.left(r)
		// Granted at Redis's now: due the moment the answer came, as
		// answered would make its slot.
		if e.cfg.onGrant != nil {
			e.cfg.onGrant(code, r.cost)
		}
		ks.floor.leave(ks.tat) // granted with no slot: its end is the TAT after it
		r.ticket = kc.value
		e.saw(r, ks, code)
		e.finish(r, stGranted, ks.off+code*1000, nil)
	}
	e.forget(ks)
}

// loneArgs are leanArgs for r on a key whose floor is fl, kept from one
// lone call to the next while the cost, the max wait and the floor stay
// the same: go-redis copies a call's arguments before it sends them, and a
// lone call is the only one the direct path makes at a time.
func (e *engine) loneArgs(r *request, fl pair, now int64) []any {
	mw := e.maxWait(r, now)
	if e.cfg.serverNow != nil {
		// The test hook writes the instant into the arguments, which a
		// call that timed out may still be reading inside go-redis.
		return e.leanArgs(r.cost, mw, fl)
	}
	if e.loneA == nil || r.cost != e.loneCost || mw != e.loneMW || fl != e.loneFl {
		e.loneA, e.loneCost, e.loneMW, e.loneFl = e.leanArgs(r.cost, mw, fl), r.cost, mw, fl
	}
	return e.loneA
}

// execInline makes b's calls for the caller holding the state and
// reports whether their answers count: false when WithCallTimeout ran out
// first, and the owner, or the caller itself, delivered b to the owner as
// timed out, handing it the state.
//
// go-redis keeps a call's context deadline only with
// ContextTimeoutEnabled; otherwise it waits for a hung server as long as
// its ReadTimeout says (3 s by default), and a caller inside go-redis
// could not keep WithCallTimeout. So the caller
// makes the call on its own goroutine only with a client that keeps the
// deadline (engine.bounded); with any other, a worker makes it and the
// caller waits for the answer or the deadline, whichever comes first, on
// one reused timer (a lone caller pays a hand-off, measured in
// docs/benchmarks.md).
//
// others says that the caller's round took in requests from the inbox,
// which may be in b: their callers woke the owner, which may have found no
// deadline to watch yet and gone back to sleep; it is woken again once
// there is one.
func (e *engine) execInline(b *batch, others bool) bool {
	e.directs.Add(1)
	e.stampArgs(b)
	b.due = time.Now().Add(e.cfg.callTimeout)
	e.inline.Store(b)
	// Anything pushed before the store above found no deadline to watch
	// if it woke the owner already; what is pushed after it finds one.
	if others || e.inbox.Load() != nil || e.closed.Load() {
		e.kick()
	}
	var as []answer
	ok := true
	if e.bounded {
		as = e.call(b, b.due)
	} else {
		b.back = make(chan []answer, 1)
		e.start(b)
		as, ok = e.awaitInline(b)
	}
	e.inline.CompareAndSwap(b, nil)
	if !ok || time.Now().After(b.due) {
		e.timeout(b, true) // unless the owner did
	}
	return ok && e.deliver(b, as)
}

// awaitInline waits for the answers of b, a call on the direct path, or
// for its deadline.
func (e *engine) awaitInline(b *batch) ([]answer, bool) {
	d := time.Until(b.due)
	if e.inlineT == nil {
		e.inlineT = time.NewTimer(d)
	} else {
		e.inlineT.Reset(d)
	}
	defer e.inlineT.Stop()
	select {
	case as := <-b.back:
		return as, true
	case <-e.inlineT.C:
		return nil, false
	}
}

// watch waits, while a caller holds the state, for it to let go, or for
// the deadline of the call it is making, at which the owner takes the
// call's batch as timed out and the state with it. Owner only.
func (e *engine) watch() {
	b := e.inline.Load()
	if b == nil || b.state.Load() != bPending {
		<-e.wake
		return
	}
	d := time.Until(b.due)
	if d <= 0 {
		e.timeout(b, true)
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.wake:
	case <-t.C:
		e.timeout(b, true)
	}
}
