package redislimit

import (
	"context"
	"sync/atomic"
	"time"
)

type op uint8

const (
	opAcquire op = iota
	opTry
	opRefund // a grant given back unused
	opSettle // a window's grant settled at its actual cost
	opPause  // a window paused
)

type status uint8

const (
	stGranted     status = iota + 1 // n: the local instant granted at
	stLimited                       // n: RetryAfter in ns
	stDeadline                      // n: RetryAfter in ns; the deadline is before the reservation
	stNever                         // the cost can never be admitted
	stClosed                        //
	stUnavailable                   // err
	stLocal                         // fail open: ask the local limiter
	stRefunded                      // a refund took something back; a settlement was applied
	stKept                          // a refund took nothing back; a settlement had nothing to apply
	stSettled                       // a window's grant was settled or refunded before
)

// A request's state is the one word its caller and the owner race on:
// the owner answers with a CAS from rqWaiting to rqDone, the caller gives
// up with a CAS from rqWaiting to rqCancelled. Whoever wins decides: a
// caller that lost receives the answer; an owner that lost treats what it
// was about to hand over as unused (a reservation nobody holds).
const (
	rqWaiting int32 = iota
	rqDone
	rqCancelled
)

// phase is where a request is in its key's line (owner only).
type phase uint8

const (
	phPending  phase = iota // not yet sent
	phInflight              // in the call under way
	phReserved              // holds a slot, granted when the slot is due
	phGone                  // answered or dropped: out of the line
)

// request is one caller's round trip. A request granted is reused
// (recycle); any other is not: the owner may still hold one (in a call
// under way) after its caller gave up. The owner writes the result fields
// after it wins the CAS and before it signals reply; the caller reads them
// after receiving from reply.
type request struct {
	reply      chan struct{} // capacity 1
	state      atomic.Int32
	next       *request // the inbox's link
	cancelNext *request // the cancellation stack's link
	key        string
	cost       int64
	op         op
	probe      bool // an opTry on behalf of permits.All: a refusal is not counted
	cancelAt   int64
	deadline   int64
	hasDL      bool
	refund     ident     // opRefund: the key's value right after the grant; a window's: its epoch and event
	actual     int64     // opSettle: the amount settled at; opPause: the pause's end in Redis µs
	until      time.Time // opPause: the pause's end, local

	// the owner's
	ks      *keyState
	phase   phase
	slot    *slot
	dlBound bool // the maxwait sent was the deadline's, not WithMaxWait's
	waited  bool // its slot is a reservation ahead, or one handed on to it

	// the result
	status status
	n      int64
	err    error
	ticket ident // stGranted: the value after the grant, if it was its call's last admission
	seen   seen  // a GCRA's key as of the decision, for its Quota (quota.go)
}

// seen is what a GCRA's decision knew of its key: the TAT after the
// latest call (Redis µs and ticks) and the Redis instant decided at (µs);
// at is 0 when unknown.
type seen struct {
	tat pair
	at  int64
}

// ident is a key's value up to its write count, W, F and N: the TAT and the
// count, which identify the value (lua/gcra.lua). The zero ident is none.
type ident struct {
	w, f, n int64
	ok      bool
}

func (e *engine) newRequest(ctx context.Context, key string, o op, cost int64) *request {
	r, _ := e.requests.Get().(*request)
	if r == nil {
		r = new(request)
	}
	*r = request{reply: e.replies.Get().(chan struct{}), key: key, op: o, cost: cost}
	if dl, ok := ctx.Deadline(); ok {
		r.hasDL, r.deadline = true, int64(dl.Sub(e.epoch))
	}
	return r
}

// recycle makes r, a request whose caller has read its grant, a new
// request's. The owner holds no granted request: it drops r from the line
// in the pass that answers it (grantDue, lone), before it next takes the
// inbox, touches nothing of r after the signal, and r was in no call under
// way (a request is granted only after its call's answer is applied, and
// the batch is then dropped). Only a
// grant whose signal the caller received is recycled: a caller that gave
// up, or whose owner exited without an answer, may leave r in the owner's
// hands. Making a request per decision was most of a loaded limiter's
// allocation, and with it a tenth of its CPU in malloc and the collector.
func (e *engine) recycle(r *request) {
	if r.state.Load() == rqDone && r.status == stGranted {
		e.requests.Put(r)
	}
}

// await waits for r's answer or for ctx to end, r having been sent. A
// caller that gives up wins or loses one CAS against the owner's answer
// (see rqWaiting); when it wins it tells the owner, which hands whatever r
// held to the waiters behind it, and returns at once, without waiting for
// the owner: a slow Redis never delays a cancellation.
func (e *engine) await(ctx context.Context, r *request) {
	defer e.replies.Put(r.reply)
	var done <-chan struct{} // nil: the answer is sure to come
	if e.closed.Load() {
		done = e.done
	}
	select {
	case <-r.reply:
		return
	case <-ctx.Done():
		if r.state.CompareAndSwap(rqWaiting, rqCancelled) {
			r.cancelAt = e.stamp()
			e.canceled.Add(1)
			if r.op == opAcquire {
				e.waiting.Add(-1)
			}
			e.sendCancel(r)
			return
		}
		<-r.reply // the owner answered first; its signal is on its way
	case <-done:
		// The owner has exited. If it never answered, it never took r.
		select {
		case <-r.reply:
		default:
			if r.state.CompareAndSwap(rqWaiting, rqCancelled) && r.op == opAcquire {
				e.waiting.Add(-1)
			}
			r.status = stClosed
		}
	}
}

// roundTrip sends r to the owner and waits for its answer.
func (e *engine) roundTrip(ctx context.Context, r *request) {
	e.send(r)
	e.await(ctx, r)
}

// finish answers r unless its caller gave up first, reporting which. The
// counters are updated before the signal, so that they include r when its
// caller returns.
func (e *engine) finish(r *request, s status, n int64, err error) bool {
	if !r.state.CompareAndSwap(rqWaiting, rqDone) {
		return false
	}
	// Written after the CAS: a caller that gave up never reads them, and
	// one that did not reads them after the signal.
	r.status, r.n, r.err = s, n, err
	switch s {
	case stGranted:
		e.granted.Add(1)
	case stLimited, stDeadline, stNever:
		if !r.probe {
			e.rejected.Add(1)
		}
	case stUnavailable:
		e.unavailable.Add(1)
	case stLocal:
		e.fellOpen.Add(1)
	}
	if r.op == opAcquire {
		e.waiting.Add(-1)
	}
	r.reply <- struct{}{}
	return true
}

// retry is the RetryAfter of a refused request.
func (r *request) retry() time.Duration { return max(time.Duration(r.n), time.Microsecond) }
