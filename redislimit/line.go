package redislimit

import "slices"

// keyState is what the owner knows of one Redis key: its line of waiters
// in FIFO order (those holding a slot, then those in the call under way,
// then those not yet sent) and the slots Redis admitted for this process
// that are not yet delivered, in the order Redis admitted them.
type keyState struct {
	name     string
	line     []*request
	slots    []*slot
	refunds  []*request // Refunds to send, one per call
	trims    []trim     // a window's: events granted to a waiter of a smaller cost
	acquires int        // Acquires in line
	pending  int        // requests in line not yet sent
	inflight bool       // a call for this key is under way
	ready    bool       // listed in engine.ready
	dirty    bool       // listed in engine.dirty
	timed    bool       // listed in engine.timed
	slot     uint16     // a Cluster's: the key's hash slot (node.go)

	// value is the key's value after this process's latest call, when
	// known; a give-back is safe only while the key still holds it.
	value ident
	// tat and off are what the latest call said: the TAT after it, in
	// Redis µs, and the offset that maps Redis µs to local ns.
	tat pair
	off int64
	// hold is a window's latest pause, in Redis µs: no slot Redis
	// admitted before it is dealt or granted here (holdBack).
	hold int64
	// replay is the key keeping the replies of the calls that give back,
	// once one did (replay.go).
	replay string
	// floor is a GCRA's: the TAT the key cannot be behind, after what
	// this process holds (floor.go).
	floor floor
}

// trim is a window's event granted to a waiter that costs less than the
// event was admitted for (a reservation handed on): the next call takes
// the event down to the holder's cost, which is always safe, so that the
// window counts what was granted.
type trim struct{ ep, id, cost int64 }

// slot is capacity Redis admitted at one instant for this process: a
// reservation, or a grant on arrival (an instant already come).
type slot struct {
	at      int64 // the local instant it is due, ns: never before Redis's instant
	red     int64 // Redis's instant, µs
	cost    int64 // what Redis admitted
	left    int64 // what the waiters dealt to it leave
	holders int   // waiters dealt to it and not yet granted
	start   pair  // where its admission lies in the schedule: from the TAT
	end     pair  // before it to the TAT after, Redis µs and ticks
	giving  bool  // being given back in the call under way
	ep, id  int64 // a window's: the key's epoch and the slot's event
	used    bool  // a window's: granted; its event is its holder's now
	moving  bool  // a window's: asked to move earlier in the call under way
}

// remove takes r out of the line.
func (ks *keyState) remove(r *request) {
	if i := slices.Index(ks.line, r); i >= 0 {
		ks.line = slices.Delete(ks.line, i, i+1)
		ks.left(r)
	}
}

// left accounts for r leaving the line.
func (ks *keyState) left(r *request) {
	if r.op == opAcquire {
		ks.acquires--
	}
	if r.phase == phPending {
		ks.pending--
	}
	r.phase = phGone
}

// idle reports whether the owner holds nothing for the key.
func (ks *keyState) idle() bool {
	return len(ks.line) == 0 && len(ks.slots) == 0 && len(ks.refunds) == 0 && len(ks.trims) == 0 && !ks.inflight
}

// spare reports whether some slot has room nobody is dealt, so that a
// waiter not yet sent might be covered without a call.
func (ks *keyState) spare() bool {
	if ks.inflight {
		return false // a waiter in the call comes first, and its fate is not known
	}
	for _, s := range ks.slots {
		if s.left > 0 && !s.giving {
			return true
		}
	}
	return false
}

// behind returns the earliest local instant at which cost could be
// granted behind everything this process knows of for the key: a lower
// bound, since other processes and the calls to come may take more.
func (ks *keyState) behind(e *engine, cost, now int64) int64 {
	at := now + 1
	if n := len(ks.slots); n > 0 {
		at = max(at, ks.slots[n-1].at)
	}
	if e.win != nil {
		return at
	}
	// The TAT after the latest call, plus cost, less tau.
	if ks.tat.w > 0 {
		t := ks.tat.add(e.q.ticks(cost), e.q.c).sub(e.q.tau, e.q.c)
		if t.f > 0 {
			t.w++
		}
		at = max(at, ks.off+t.w*1000)
	}
	return at
}

// reassign deals the key's slots out again to the waiters in line, after
// something freed capacity: a waiter that gave up before its slot was
// due, one refused for its deadline after Redis reserved for it, an answer
// for a waiter that gave up while its call was under way. Each waiter, in
// FIFO order, takes the earliest slot from the previous waiter's on that
// still has room for its cost and is not yet due; a waiter not yet sent
// that is covered so is granted without a call. The deal stops at the
// first waiter that nothing covers (no one passes it) or that is in the
// call under way (its fate is unknown).
//
// No waiter ever moves to a later slot: by induction, every waiter before
// it moved to a slot no later than its own, so its own slot still has the
// room it had. The capacity in use at each slot's instant never exceeds
// what Redis admitted there, so the bound holds; a slot a waiter takes is
// not yet due, so no grant comes later than its slot's instant, and none
// bunches with grants Redis admitted later.
func (e *engine) reassign(ks *keyState, now int64) {
	for _, s := range ks.slots {
		s.left, s.holders = s.cost, 0
	}
	j := 0
	kept := ks.line[:0]
	stopped := false
	for _, r := range ks.line {
		if stopped || r.phase == phInflight {
			stopped = true
			if r.phase == phReserved {
				// Behind the stop, a waiter keeps its own slot: its
				// count must say so, or another could be dealt it.
				r.slot.left -= r.cost
				r.slot.holders++
			}
			kept = append(kept, r)
			continue
		}
		for j < len(ks.slots) && !e.fits(ks, ks.slots[j], r, now) {
			j++
		}
		if j == len(ks.slots) {
			stopped = true // only a waiter not yet sent can find nothing
			kept = append(kept, r)
			continue
		}
		if e.deal(ks, r, ks.slots[j], now) {
			kept = append(kept, r)
		}
	}
	clear(ks.line[len(kept):])
	ks.line = kept
	ks.prune(e, now)
	if len(e.spare(ks, now)) > 0 {
		e.markReady(ks) // to give back what nobody here can use
	}
	e.forget(ks)
}

// fits reports whether waiter r may take slot s at now (see reassign). A
// window's slot is one event, which settles for one holder, and no slot
// before its pause goes to a waiter that does not hold it already
// (holdBack sends those again); a TryAcquire takes only room that is due
// now: it never waits.
func (e *engine) fits(ks *keyState, s *slot, r *request, now int64) bool {
	return !s.giving && !s.used && (!s.moving || s == r.slot) && s.left >= r.cost && (s.at >= now || s == r.slot) &&
		(r.op != opTry || s.at <= now) && (e.win == nil || s.holders == 0 && (s.red >= ks.hold || s == r.slot))
}

// deal gives waiter r slot s, the earliest that fits it, and reports
// whether r stays in the line: a waiter not yet sent whose deadline even
// that slot misses is answered and leaves.
func (e *engine) deal(ks *keyState, r *request, s *slot, now int64) bool {
	if r.phase == phPending && r.hasDL && s.at > r.deadline {
		ks.left(r)
		e.finish(r, stDeadline, s.at-now, nil)
		return false
	}
	s.left -= r.cost
	s.holders++
	switch {
	case r.phase == phPending:
		r.phase, r.waited = phReserved, true
		ks.pending--
		e.handedOff.Add(1)
		e.markTimed(ks)
	case s != r.slot:
		r.waited = true
		e.handedOff.Add(1)
	}
	r.slot = s
	return true
}

// grantDue grants, key by key in FIFO order, every waiter whose slot is
// due, and returns the earliest instant a slot still ahead falls due (0:
// none).
func (e *engine) grantDue(now int64) int64 {
	var wake int64
	kept := e.timed[:0]
	for _, ks := range e.timed {
		next := ks.grantDue(e, now)
		ks.prune(e, now)
		if next == 0 {
			ks.timed = false
			e.forget(ks)
			continue
		}
		kept = append(kept, ks)
		if wake == 0 || next < wake {
			wake = next
		}
	}
	clear(e.timed[len(kept):])
	e.timed = kept
	return wake
}

func (ks *keyState) grantDue(e *engine, now int64) int64 {
	n := 0
	for _, r := range ks.line {
		if r.phase != phReserved {
			break
		}
		s := r.slot
		if s.at > now || s.moving {
			break
		}
		s.holders--
		n++
		ks.left(r)
		if e.cfg.beforeGrant != nil && r.state.Load() == rqWaiting {
			e.cfg.beforeGrant(r.cost)
		}
		if e.win != nil {
			r.ticket = ident{w: s.ep, n: s.id, ok: true}
		}
		e.saw(r, ks, s.red)
		// If its caller gave up at this very instant, the cancellation
		// finds it gone. A GCRA's room it leaves is due, so nobody else can
		// take it; a window's stays counted in Redis for a whole window
		// unless it is dealt out again or given back. Nothing of r is
		// read once it is answered: its caller may be reusing it already
		// (recycle).
		cost := r.cost
		if !e.finish(r, stGranted, s.at, nil) {
			if e.win != nil {
				e.markDirty(ks)
			}
			continue
		}
		if e.cfg.onGrant != nil {
			// Told once the grant is its caller's: a slot whose caller
			// gave up is dealt out again or given back.
			e.cfg.onGrant(s.red, cost)
		}
		if e.win != nil {
			s.used = true
			if s.cost > cost {
				ks.trims = append(ks.trims, trim{ep: s.ep, id: s.id, cost: cost})
				e.markReady(ks)
			}
		}
	}
	ks.line = slices.Delete(ks.line, 0, n)
	// Only the head can be due next; a slot moving is due when its answer
	// says, so there is nothing to wake for.
	if len(ks.line) > 0 {
		if r := ks.line[0]; r.phase == phReserved && !r.slot.moving {
			return r.slot.at
		}
	}
	return 0
}

// prune drops the slots at the front that nobody holds and whose instant
// has come: room unused at its instant is gone, as idle time is in GCRA.
// A window drops the slots it granted, wherever they are: the room of one
// nobody used stays in the window's count until it is given back.
func (ks *keyState) prune(e *engine, now int64) {
	if e.win != nil {
		ks.slots = slices.DeleteFunc(ks.slots, func(s *slot) bool { return s.used && s.holders == 0 })
		return
	}
	n := 0
	for _, s := range ks.slots {
		if s.holders > 0 || s.giving || s.at > now {
			break
		}
		ks.floor.leave(s.end) // granted or unused, it filled the TAT
		n++
	}
	if n > 0 {
		clear(ks.slots[:n])
		ks.slots = ks.slots[n:]
	}
}
