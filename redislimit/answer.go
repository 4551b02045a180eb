package redislimit

import (
	"errors"
	"math"
	"slices"

	"github.com/redis/go-redis/v9"
)

// apply takes in the answers of a batch.
func (e *engine) apply(b *batch, now int64) {
	e.rtt = max(b.r-b.s, 0)
	for _, kc := range b.keys {
		ks := kc.ks
		ks.inflight = false
		if kc.err != nil {
			e.failed(b.node, kc)
		} else {
			e.answered(kc, b, now)
		}
		ks.line = slices.DeleteFunc(ks.line, func(r *request) bool { return r.phase == phGone })
		if ks.pending > 0 || len(ks.refunds) > 0 {
			e.markReady(ks)
		}
		e.forget(ks)
	}
}

// answered applies one key's decisions, in order. An admission becomes a
// slot due at its instant in local terms: Redis's instant plus the offset
// the call measured, taken from the moment the answer arrived, so that the
// slot is never early (Redis read its clock before that moment), and never
// before the key's previous slot, so that grants keep FIFO order.
func (e *engine) answered(kc *keyCall, b *batch, now int64) {
	e.cameBack(b.node, now)
	ks := kc.ks
	off := b.r - kc.now*1000
	ks.off = off
	codes := kc.codes
	if e.win != nil {
		codes = e.settled(kc)
	} else {
		e.gaveBack(kc)
	}
	first := len(ks.slots)
	e.reserve(kc, codes, off, now)
	if e.win != nil {
		// A pause that came while the call was under way: Redis did not
		// know of it, and may have admitted this call's requests (and moved
		// its reservations) before it.
		e.holdBack(ks)
		return
	}
	e.chain(ks, first)
}

// reserve answers each request of kc by its code: a slot reserved at its
// instant (off shifts Redis's µs onto the owner's timeline), a refusal,
// or never.
func (e *engine) reserve(kc *keyCall, codes []int64, off, now int64) {
	ks := kc.ks
	last := -1 // a GCRA call's last admission: the only grant a Refund can take back
	admitted := 0
	for i, code := range codes {
		if code > 0 {
			admitted++
			if e.win == nil {
				last = i
			}
		}
	}
	// The call's slots in one allocation: under load one call admits
	// dozens, and a slot lives about as long as the others of its call.
	slab := make([]slot, admitted)
	var prev int64
	if n := len(ks.slots); n > 0 {
		prev = ks.slots[n-1].at
	}
	id := kc.first
	for i, r := range kc.reqs {
		switch code := codes[i]; {
		case code > 0:
			at := max(off+code*1000, prev)
			prev = at
			s := &slab[0]
			slab = slab[1:]
			*s = slot{at: at, red: code, cost: r.cost, left: r.cost}
			if e.win != nil {
				s.ep, s.id = kc.epoch, id
				id++
			}
			ks.slots = append(ks.slots, s)
			e.hold(kc, r, s, i == last, now)
		case code < 0:
			e.refuse(ks, r, code, kc.now)
		default:
			ks.left(r)
			e.finish(r, stNever, 0, nil)
		}
	}
}

// hold gives r the slot s Redis reserved for it, unless its caller gave
// up while the call was under way (the slot is free for the waiters
// behind) or s lies past its deadline. last says r is the call's last
// admission, the one its ticket can refund.
func (e *engine) hold(kc *keyCall, r *request, s *slot, last bool, now int64) {
	ks := kc.ks
	switch {
	case r.state.Load() == rqCancelled:
		ks.left(r)
		e.markDirty(ks)
	case r.hasDL && s.at > r.deadline:
		ks.left(r)
		e.finish(r, stDeadline, s.at-now, nil)
		e.markDirty(ks)
	default:
		r.phase, r.slot, r.waited = phReserved, s, s.red > kc.now
		s.left, s.holders = 0, 1
		if last {
			r.ticket = kc.value
		}
		e.markTimed(ks)
	}
}

// chain places a GCRA call's admissions, the slots from first on, one
// right behind the other, the last ending at the TAT the call left.
func (e *engine) chain(ks *keyState, first int) {
	end := ks.tat
	for i := len(ks.slots) - 1; i >= first; i-- {
		s := ks.slots[i]
		s.end = end
		end = end.sub(e.q.ticks(s.cost), e.q.c)
		s.start = end
	}
	if len(ks.slots) > first {
		ks.floor.admitted(ks.tat) // the call's last admission's end
	}
}

// refuse answers r, which Redis refused at its instant now (µs) with code
// -wait (µs): its wait ran past its deadline, or past what it may wait.
func (e *engine) refuse(ks *keyState, r *request, code, now int64) {
	ks.left(r)
	e.saw(r, ks, now)
	st := stLimited
	if r.op == opAcquire && r.dlBound {
		st = stDeadline
	}
	e.finish(r, st, -code*1000, nil)
}

// gaveBack applies what a GCRA call said of its give-back: the key's value
// after it, whether the trailing slots or the Refund went back.
func (e *engine) gaveBack(kc *keyCall) {
	ks := kc.ks
	ks.value = kc.value
	ks.tat = pair{w: kc.value.w, f: kc.value.f}
	if kc.gave {
		for _, s := range kc.give {
			e.givenBack.Add(uint64(s.cost))
		}
		ks.slots = slices.DeleteFunc(ks.slots, func(s *slot) bool { return s.giving })
		for _, r := range kc.settles {
			ks.floor.refunded(pair{w: r.refund.w, f: r.refund.f})
		}
		ks.floorAfterGiveBack()
	} else if len(kc.give) > 0 {
		for _, s := range kc.give {
			s.giving = false
		}
		e.markDirty(ks)
	}
	for _, r := range kc.settles {
		st := stKept
		if kc.gave {
			st = stRefunded
			e.refunded.Add(1)
		}
		e.finish(r, st, 0, nil)
	}
}

// failed fails one key's call to node n. A call that may have been
// applied is counted as consumed: nothing is sent again on its behalf, and
// no give-back is tried until a call tells the key's value again, since
// the lost call may have admitted behind every slot held. A call that
// found n out of reach starts n's probe interval, and on a Cluster any
// failure drops the owner's routes (rerouted).
func (e *engine) failed(n *node, kc *keyCall) {
	ks := kc.ks
	unknown := outcomeUnknown(kc.err)
	if unknown {
		ks.value = ident{}
		for _, s := range kc.give {
			ks.floor.leave(s.end) // given back or not: counted as consumed
		}
		ks.slots = slices.DeleteFunc(ks.slots, func(s *slot) bool { return s.giving })
	} else {
		for _, s := range kc.give {
			s.giving = false
		}
	}
	for _, s := range kc.moves {
		s.moving = false
	}
	if len(kc.trims) > 0 {
		// Sent again with the next call: a trim is safe to repeat (it never
		// settles the event, and one after its holder's Settle is refused).
		ks.trims = append(kc.trims, ks.trims...)
	}
	if e.win != nil && len(kc.give) > 0 {
		// A window's give-back is only ever a gift: one that failed is
		// not tried again (an error reply would fail again at once), and
		// the room stays counted until it leaves the window.
		ks.slots = slices.DeleteFunc(ks.slots, func(s *slot) bool { return slices.Contains(kc.give, s) })
	}
	if !unknown && len(kc.moves) > 0 {
		e.markTimed(ks) // the slots stayed where they were: due at their instants
		e.holdBack(ks)  // unless a pause came while they moved
	}
	if unknown && len(kc.moves) > 0 {
		// A reservation may have moved earlier: granting it at its old
		// instant could use it after the window let it go. Its waiters
		// fail; the reservation stays counted in Redis.
		e.abandon(ks, kc.moves, &UnavailableError{Key: ks.name, Cause: kc.err, Unknown: true})
	}
	for _, r := range append(kc.settles, kc.pauses...) {
		e.finish(r, stUnavailable, 0, &UnavailableError{Key: ks.name, Cause: kc.err, Unknown: unknown})
	}
	for _, r := range kc.reqs {
		ks.left(r)
		e.finish(r, e.undecided(), 0, &UnavailableError{Key: ks.name, Cause: kc.err, Unknown: unknown})
	}
	e.markDirty(ks)
	now := e.now()
	e.rerouted(kc.err, now)
	if outOfReach(kc.err) {
		n.downErr = kc.err // the cause of what fails without a call (reachable)
		e.wentDown(n, now, kc.err)
		if e.cfg.probe > 0 {
			// Spare the next callers the wait (WithProbeInterval).
			n.downTill = now + min(int64(e.cfg.probe), math.MaxInt64-now)
		}
	}
}

// outOfReach reports whether a failed call's error says that Redis itself
// is out of reach, rather than that it answered this key's call with an
// error reply or with a reply the limiter could not read.
func outOfReach(err error) bool {
	var reply redis.Error
	return !errors.As(err, &reply) && !errors.Is(err, errMalformed)
}

// abandon fails the waiters holding slots and drops the slots, which stay
// counted where Redis keeps them.
func (e *engine) abandon(ks *keyState, slots []*slot, err error) {
	for _, r := range ks.line {
		if r.phase == phReserved && slices.Contains(slots, r.slot) {
			r.slot.holders--
			ks.left(r)
			e.finish(r, e.undecided(), 0, err)
		}
	}
	ks.line = slices.DeleteFunc(ks.line, func(r *request) bool { return r.phase == phGone })
	ks.slots = slices.DeleteFunc(ks.slots, func(s *slot) bool { return slices.Contains(slots, s) })
}
