package keyed

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/owner"
	"github.com/sluicehq/sluice/scheduler"
)

// shard owns a share of the keys: their table, their entries, their
// waiters and one timer. The table is read without a lock by the fast path
// and changed under the write lock (a new key by its first caller, a
// dropped one by the owner). The read lock is taken by the fast path of
// keys with an entry, which the owner drops, demotes and changes under the
// write lock. Everything marked owner below is touched by the owner
// goroutine only, so none of it needs a lock.
type shard[K comparable] struct {
	granted, rejected, canceled atomic.Uint64
	atOnce                      atomic.Uint64 // Acquires granted on arrival, while an AtOnceObserver reads them
	_                           [40]byte      // the counters' own cache line

	l     *Limiter[K]
	idx   int
	mu    sync.RWMutex
	tab   atomic.Pointer[table]
	live  int                  // under mu: the keys in tab
	tombs int                  // under mu: tab's slots of dropped keys
	side  map[uint64]*entry[K] // under mu: the keys with an entry, by tag (see entry)

	o     owner.Owner[*call[K]] // the inbox, the round trip, the loop, the timer; a poke: keys were made
	calls sync.Pool

	// owner
	heap     []*entry[K]         // min-heap on due: the waiting keys
	sw       sweep               // the passes over the table that drop the keys back at full capacity
	last     int64               // the latest instant read: the owner's time never runs back
	granting algorithms.Decision // the decision of the grant being made
	outbox   []*call[K]          // answered, to be signalled once the key is settled (see reply)
	cellGen  uint64              // the generation of the shard's cells that every cell is in

	// closing holds the costs of the Acquires that are closing a cell's
	// gate and have not yet pinned its key, by lane (see closer.go); off
	// the owner's cache lines, as callers write it.
	_       [64]byte
	closing [closingLanes]atomic.Int64
}

// recheck is the least time between two passes of the owner over its
// table (see sweep), and between two looks at a key with a request at the
// owner: a key full again is dropped at most about this long after the
// instant it is (longer for a large table), and a shard costs its owner at
// most about a hundred passes a second.
const recheck = 10 * time.Millisecond

// now reads the owner's clock as ns on the timeline, never earlier than a
// reading before. It keeps the origin of the shard's cells within reach of
// the reading, so that every decision the owner makes (at instants up to
// its latest reading) fits their current generation, and refreshes the
// cells when a generation starts.
func (s *shard[K]) now() int64 {
	s.last = max(s.last, s.l.stamp())
	if c := s.l.cellCfg.Load(); c != nil {
		cells := c.cells[s.idx]
		cells.Advance(s.l.t(s.last))
		if g := cells.Generation(); g != s.cellGen {
			s.refreshCells(cells, g)
		}
	}
	return s.last
}

// Wake opens a wake-up (owner.Plugin). After keys were made (a poke), the
// owner sweeps soon, so that it learns when they will be full: the
// decision their first caller made is in their state already.
func (s *shard[K]) Wake(poked bool) int64 {
	now := s.now() // one clock read per batch
	if poked {
		s.soon(now)
	}
	return now
}

// Cancel removes a waiter whose caller gave up at at (owner.Plugin),
// granting first what was due by then: a deadline at the very instant of
// its grant gets the grant.
func (s *shard[K]) Cancel(oc *owner.Call[*call[K]], at, now int64) {
	c := oc.Self
	s.grantDue(c.e, at)
	s.cancel(c, at, now)
	s.flush()
}

// Handle serves one request taken from the inbox (owner.Plugin).
func (s *shard[K]) Handle(oc *owner.Call[*call[K]], now int64) {
	s.handle(oc.Self, now)
	s.flush()
}

// handle serves one request taken from the inbox.
func (s *shard[K]) handle(c *call[K], now int64) {
	e := c.e
	if c.op == opTune {
		s.tune(c)
		return
	}
	if c.closer {
		// The Acquire the key's queue was waiting for: it goes first, and
		// those behind it are judged after it, in their order.
		defer s.rejudge(s.unawait(e), now)
	}
	w := e.waiters()
	// With nobody waiting, a closed gate is that of an Acquire denied
	// before its key's promotion, on its way here (see attempt), unless it
	// is c's own: held keeps it closed, and c's answer reopens it.
	held := w == nil && !c.closer && s.held(e)
	judged := true // an Acquire's, unless it waits undecided (await)
	switch {
	case s.overCapacity(c, e, w, held, now):
	case held || w != nil && w.awaiting:
		judged = s.behindOneOnItsWay(c, e, w, now)
	default:
		at := min(c.arrival, now) // none is in the future
		if w != nil {
			at = min(max(at, w.arrived), now) // arrivals keep their order in time
			// Heads due by its arrival go first, at their due instants (a
			// wake-up that ran late leaves them to this one): c is judged
			// against what is left, and MaxQueue does not count them.
			s.grantDue(e, at)
			w = e.waiters()
		}
		if grant, known, granted := s.judge(c, e, w, at, now, held); !granted {
			s.queueOrRefuse(c, e, w, at, now, grant, known, held)
		}
	}
	if judged && c.op == opAcquire {
		s.taken(e, c.node.Cost)
	}
}

// overCapacity refuses c if its cost no longer fits the key: the caller
// checked the cost against the capacity it read, and a SetBurst handled
// just before this request may have lowered it.
func (s *shard[K]) overCapacity(c *call[K], e *entry[K], w *waiters[K], held bool, now int64) bool {
	capacity := s.capacity(e)
	if c.node.Cost <= capacity {
		return false
	}
	s.reply(c, stTooLarge, capacity)
	if w == nil {
		s.leave(e, held, now)
	}
	return true
}

// behindOneOnItsWay serves c while the key waits for an Acquire on its way
// that closed the gate (see attempt): an Acquire waits behind it,
// undecided (await), and judged is false; a TryAcquire is refused as if
// that one and those behind it were queued already (behindCloser).
func (s *shard[K]) behindOneOnItsWay(c *call[K], e *entry[K], w *waiters[K], now int64) (judged bool) {
	if c.op != opTry {
		s.await(e, c, now)
		return false
	}
	wait, ok := s.behindCloser(e, s.l.t(now), c.node.Cost)
	if !ok {
		wait = 1 // a lower bound: a key made its own meanwhile (SetRate) cannot tell
	}
	c.remaining, c.reset = 0, int64(wait)
	s.refuse(c, stLimited, int64(wait))
	if w == nil {
		s.settle(e, now)
	}
	return true
}

// judge grants c, arrived at at, at once if nobody waits on its key and
// the algorithm admits it (granted); otherwise it predicts when c would
// be granted (grant; known false when it cannot tell).
func (s *shard[K]) judge(c *call[K], e *entry[K], w *waiters[K], at, now int64, held bool) (grant int64, known, granted bool) {
	try := c.op == opTry
	if w != nil {
		need := try || c.hasDL || s.l.cfg.maxWait >= 0 || s.l.cfg.maxQueue > 0
		grant, known = w.predict(s, e, now, at, c.node.Cost, need)
		c.remaining = 0
		return grant, known, false
	}
	d := s.allow(e, at, c.node.Cost, !try) // a waiter closes the fast path
	if d.Allowed {
		s.grant(c, at, d)
		s.leave(e, held, now)
		return 0, false, true
	}
	c.remaining, c.reset, c.nextUnit = d.Remaining, s.l.ns(d.ResetAt)-now, s.l.until(d.NextAt, now)
	return max(s.l.ns(d.RetryAt), at+1), true, false
}

// queueOrRefuse queues c on its key, or refuses it when it may not wait
// (a TryAcquire, a full queue) or cannot be granted in time (WithMaxWait
// counted from its arrival, its deadline).
func (s *shard[K]) queueOrRefuse(c *call[K], e *entry[K], w *waiters[K], at, now, grant int64, known, held bool) {
	// Without a prediction, the head's due instant is a lower bound on any
	// wait behind it: refuse what even that cannot meet.
	floor := grant
	if !known {
		floor = max(w.q.Due(now), now+1)
	}
	wait := floor - now
	if w != nil {
		c.reset = wait
	}
	switch {
	case c.op == opTry:
		s.refuse(c, stLimited, wait)
	case s.l.cfg.maxQueue > 0 && w != nil && w.q.Len() >= s.l.cfg.maxQueue:
		s.refuse(c, stLimited, wait)
	case s.l.cfg.maxWait >= 0 && floor-at > int64(s.l.cfg.maxWait): // counted from its arrival
		s.refuse(c, stLimited, wait)
	case c.hasDL && floor > c.deadline:
		s.refuse(c, stDeadline, wait)
	default:
		s.enqueue(c, e, w, at, now, grant, known)
		return
	}
	if w != nil {
		w.dropped()
		w.publish(w.q.Due(now)) // the prediction may have built the shadow
		return
	}
	// Refused on a queue that stayed empty: the denial may have closed the
	// gate, which nobody waiting must leave closed.
	s.leave(e, held, now)
}

// enqueue queues c, arrived at at, on its key, to be granted at grant
// when known.
func (s *shard[K]) enqueue(c *call[K], e *entry[K], w *waiters[K], at, now, grant int64, known bool) {
	if w == nil {
		w = new(waiters[K])
		e.setWaiters(w)
	}
	c.node.Arrival = at
	w.arrived = at
	w.q.Push(&c.node)
	if known {
		w.queued(s, grant, c.node.Cost)
	}
	w.publish(max(grant, w.q.Due(now)))
	s.watch(e, w.q.Due(now))
}

// await queues Acquire c, undecided, behind the Acquire on its way that
// closed e's gate (see attempt): that one arrived first (it was denied
// before c was sent), so c must not take the units it waits for, nor
// empty a queue whose end would reopen the gate while it is still on its
// way. The key stays out of the heap until it comes (handle).
func (s *shard[K]) await(e *entry[K], c *call[K], now int64) {
	w := e.waiters()
	if w == nil {
		w = &waiters[K]{awaiting: true}
		e.setWaiters(w)
	}
	at := max(min(c.arrival, now), w.arrived)
	c.node.Arrival, w.arrived = at, at
	w.q.Push(&c.node)
	w.tail.Store(0) // unknown: a TryAcquire asks the owner
}

// unawait takes out of e's queue, in order, the Acquires that waited for
// the one on its way, which has come (or gone): the key is left as that
// one found it.
func (s *shard[K]) unawait(e *entry[K]) []*call[K] {
	w := e.waiters()
	if w == nil || !w.awaiting {
		return nil
	}
	var queued []*call[K]
	for n := w.q.PopFront(); n != nil; n = w.q.PopFront() {
		queued = append(queued, n.Value)
	}
	e.setWaiters(nil)
	return queued
}

// rejudge handles, in their order, the Acquires unawait took out.
func (s *shard[K]) rejudge(queued []*call[K], now int64) {
	for _, c := range queued {
		s.handle(c, now)
	}
}

// leave is for a key whose queue stayed empty through a request: its gate
// is reopened (quiet) unless held, closed for another Acquire on its way
// here (see handle), whose own answer reopens it.
func (s *shard[K]) leave(e *entry[K], held bool, now int64) {
	if held {
		s.settle(e, now)
		return
	}
	s.quiet(e, now)
}

// grant answers c with a grant at the instant at, decided by d.
func (s *shard[K]) grant(c *call[K], at int64, d algorithms.Decision) {
	s.granted.Add(1)
	c.remaining, c.reset, c.nextUnit = d.Remaining, max(s.l.ns(d.ResetAt)-at, 0), s.l.until(d.NextAt, at)
	s.reply(c, stGranted, at)
}

func (s *shard[K]) refuse(c *call[K], st status, wait int64) {
	s.rejected.Add(1)
	s.reply(c, st, max(wait, 1))
}

// reply writes the result into c, to be signalled by the next flush.
// Stats and the key's pin are updated at once; the signal waits until the
// owner has finished with the key (its queue dropped, its gate reopened,
// its tail published), so that whatever the caller does next on the key
// finds it as the answer left it: a caller woken first would find the
// gate of a queue that just emptied still closed, and be refused behind
// nobody.
func (s *shard[K]) reply(c *call[K], st status, n int64) {
	if c.op == opAcquire {
		s.l.waiting.Add(-1)
	}
	c.e.unpin()
	c.Status, c.n = st, n
	s.outbox = append(s.outbox, c)
}

// ack acknowledges a cancellation that came after c's answer. Through the
// outbox, so that it can never reach the caller before the answer.
func (s *shard[K]) ack(c *call[K]) { s.outbox = append(s.outbox, c) }

// flush signals every caller answered since the last flush, in order.
func (s *shard[K]) flush() {
	for i, c := range s.outbox {
		c.Signal()
		s.outbox[i] = nil
	}
	s.outbox = s.outbox[:0]
}

// cancel removes a waiter whose caller gave up at at, wherever it is in its
// key's queue (a waiter it makes head became head then), or acknowledges a
// cancellation that came after the answer.
func (s *shard[K]) cancel(c *call[K], at, now int64) {
	e := c.e
	if w := e.waiters(); w != nil && w.q.Remove(&c.node, at) {
		w.shadowOK = false
		s.canceled.Add(1)
		s.reply(c, stCanceled, 0)
		switch {
		case w.awaiting:
			// The gate stays closed for the Acquire on its way; this
			// one, never judged, leaves the units on their way.
			s.taken(e, c.node.Cost)
			if w.q.Len() == 0 {
				e.setWaiters(nil)
				s.settle(e, now)
			}
		case w.q.Len() == 0:
			s.quiet(e, now)
		default:
			due := w.q.Due(now)
			w.publish(due)
			s.watch(e, due)
		}
		return
	}
	s.ack(c)
}

// grantDue grants the heads of e's queue due by at.
func (s *shard[K]) grantDue(e *entry[K], at int64) {
	w := e.waiters()
	if w == nil || w.q.Len() == 0 || w.awaiting {
		return
	}
	w.q.Grant(at, keyOwner[K]{s, e})
	if w.q.Len() == 0 {
		s.quiet(e, at)
	}
}

// quiet is for a key whose queue is empty: it reopens the fast path and
// drops the queue, and the owner looks at the key at its next pass.
func (s *shard[K]) quiet(e *entry[K], now int64) {
	s.openGate(e)
	e.setWaiters(nil)
	s.settle(e, now)
}

// watch makes the owner grant e's head next at due: e has waiters.
func (s *shard[K]) watch(e *entry[K], due int64) {
	e.due = due
	if e.hidx < 0 {
		s.push(e)
	} else {
		s.fix(int(e.hidx))
	}
}

// settle is for a key that nobody waits on and that the owner has just
// served or changed: out of the heap, its entry given back at once if it
// is a cell key with nothing at the owner (so that its fast path is
// lock-free again), and looked at by the next pass, from now (the pass
// learns when it will be full, and gives back the entries settle could
// not).
func (s *shard[K]) settle(e *entry[K], now int64) {
	s.remove(e)
	e.fullAt = 0
	if e.isCell() && !e.busy() {
		s.mu.Lock()
		if sl, tag := s.tab.Load().find(ident(e.h)); sl != nil && tag&fSide != 0 && s.entryOf(tag) == e && !e.busy() {
			s.demote(sl, e)
		}
		s.mu.Unlock()
	}
	s.soon(now)
}

// Schedule grants every head due by now, sweeps when a pass is due, and
// returns the next due instant for the one timer, with a fresh reading to
// arm it from (owner.Plugin). A head that fell due during the pass is the
// next wake-up's, which the core starts at once: cancellations that came
// meanwhile go first.
func (s *shard[K]) Schedule(now int64) (wake, at int64) {
	s.runDue(now)
	now = s.now()
	s.sweep(now)
	if c := cap(s.heap); c >= shrinkFrom && len(s.heap) <= c/4 {
		s.heap = append(make([]*entry[K], 0, 2*len(s.heap)), s.heap...)
	}
	wake = s.nextPass()
	if len(s.heap) > 0 && (wake == 0 || s.heap[0].due < wake) {
		wake = s.heap[0].due
	}
	return wake, now // the core arms the timer from this fresh reading
}

// runDue grants the due heads of every waiting key due by now.
func (s *shard[K]) runDue(now int64) {
	for len(s.heap) > 0 && s.heap[0].due <= now {
		e := s.heap[0]
		w := e.waiters()
		if w == nil {
			s.settle(e, now) // cannot happen: a key leaves the heap with its last waiter
			continue
		}
		wake := w.q.Grant(now, keyOwner[K]{s, e})
		switch {
		case w.q.Len() == 0:
			s.quiet(e, now)
		case wake == 0: // waits for an event, which no rate algorithm does
			s.remove(e)
		default:
			w.publish(wake)
			s.watch(e, wake)
		}
		s.flush()
	}
}

// full returns the instant e's state is full again (its ResetAt: now if
// it is), and for a key changed by SetRate or SetBurst no sooner than its
// keep instant. A decision for cost 0 changes
// nothing and, on the lock-free form, is safe beside fast-path callers.
func (s *shard[K]) full(e *entry[K], now int64) int64 {
	d := s.allow(e, now, 0, false)
	reset := s.l.ns(d.ResetAt)
	if x := e.x.Load(); x != nil {
		reset = max(reset, x.keep)
	}
	return reset
}

// shrinkFrom is the size from which the owner gives back the memory of a
// heap that has emptied to a quarter of its peak.
const shrinkFrom = 64

// Shutdown fails every waiter and every request still in the inbox with
// ErrClosed (owner.Plugin); the core then acknowledges the cancellations,
// so that no caller waits on an owner that is gone.
func (s *shard[K]) Shutdown(left *owner.Call[*call[K]]) {
	s.mu.RLock()
	for _, e := range s.side {
		if w := e.waiters(); w != nil {
			for n := w.q.PopFront(); n != nil; n = w.q.PopFront() {
				s.reply(n.Value, stClosed, 0)
			}
		}
	}
	s.mu.RUnlock()
	for c := left; c != nil; c = c.Next() {
		s.reply(c.Self, stClosed, 0) // signalled by the flush, after the loop
	}
	s.flush()
}

// keyOwner adapts one key of a shard to scheduler.Owner.
type keyOwner[K comparable] struct {
	s *shard[K]
	e *entry[K]
}

func (o keyOwner[K]) Decide(at, cost int64) (bool, int64) {
	d := o.s.allow(o.e, at, cost, false)
	if d.Allowed {
		o.s.granting = d
		return true, 0
	}
	return false, o.s.l.ns(d.RetryAt)
}

func (o keyOwner[K]) Granted(n *scheduler.Node[*call[K]], at int64) {
	o.s.grant(n.Value, at, o.s.granting)
}
