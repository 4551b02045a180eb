package redislimit

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// Window is an exact sliding window whose state lives in Redis, shared by
// every process that uses the same key and limit: at most limit.Count
// units are admitted in any interval of length limit.Per, across all of
// them. Its grants can be settled with what the call really cost, which
// is what a tokens-per-minute quota needs: acquire the estimate, then
// Settle the usage the response reports. The window counts the settled
// amount from the grant's instant on, as an API that charges an estimate
// on arrival and the real usage once it answers does; a Refund takes the
// grant out of the window entirely. Both are always safe, whatever was
// admitted since, since taking an amount out of one admission never makes
// any window hold more.
//
// It has the semantics of actor.New(algorithms.NewSlidingWindow(limit)) in
// one process, and the protocol of Limiter: the owner sends the requests
// of every caller waiting at once as one script call, which admits them in
// order at Redis's clock, now or at a reserved instant ahead (when enough
// of the oldest admissions have left the window), and the callers wait for
// their instants locally, on the owner's one timer; a waiter that gives up
// hands its reservation on, or gives it back. Across processes,
// admissions follow one another in time: a request never passes a
// reservation any process holds. A reservation moves earlier when what
// was settled or given back since, by any process, made room sooner: each
// call the owner makes for the key asks for the reservations it holds.
// Pause holds every process sharing the window.
//
// Redis keeps one hash field per admission still in the window (about 40
// bytes each), and a call's work grows with the admissions that must
// leave the window before its requests fit: fine for a few thousand
// admissions per window (requests per minute, tokens per minute counted
// per request), not for a window of a million single-unit admissions,
// which a GCRA (New) keeps in one value.
//
// A Window is safe for concurrent use. Close it when done: it owns two
// goroutines. Closing it does not close the Redis client.
type Window struct {
	e   *engine
	key string
}

// window is a sliding window in the script's terms.
type window struct {
	limit int64
	span  int64 // the window in µs, rounded up: never shorter than asked
	rate  algorithms.Rate
}

// NewWindow returns a Window for the Redis key key admitting limit.Count
// units in any interval of limit.Per (NewWindow(client, key,
// algorithms.PerMinute(200_000)) for 200,000 tokens a minute), and starts
// its goroutines. Every process sharing key must use the same limit. The
// window is kept in whole microseconds, rounded up. NewWindow fails,
// matching permits.ErrInvalidConfig, for a nil client, an empty key, an
// invalid rate, one that Redis's integer arithmetic cannot keep exact, or
// invalid options. Nil options are ignored. WithFailOpen falls back to a
// local sliding window of the share of the limit.
func NewWindow(client redis.UniversalClient, key string, limit algorithms.Rate, opts ...Option) (*Window, error) {
	if key == "" {
		return nil, invalid("empty key")
	}
	if err := limit.Validate(); err != nil {
		return nil, err
	}
	span := (int64(limit.Per) + int64(time.Microsecond) - 1) / int64(time.Microsecond)
	if limit.Count >= maxExact/4 || span >= maxExact/8 {
		return nil, invalid("window %v is too large for Redis's integer arithmetic", limit)
	}
	win := &window{limit: limit.Count, span: span, rate: limit}
	e, err := newEngine(client, quota{rate: limit, burst: limit.Count}, win, opts)
	if err != nil {
		return nil, err
	}
	e.keep, e.logKey = true, key
	return &Window{e: e, key: key}, nil
}

// local is the fail-open limiter: a sliding window of num/den of the
// limit (at least 1).
func (w *window) local(num, den int64, cfg config) (*actor.Limiter, error) {
	share := max(1, w.limit/den*num+w.limit%den*num/den)
	sw, err := algorithms.NewSlidingWindow(algorithms.Rate{Count: share, Per: w.rate.Per})
	if err != nil {
		return nil, err
	}
	return actor.MustNew(sw, actor.WithClock(cfg.clock), actor.WithName("redislimit fail-open")), nil
}

// Acquire waits until cost units are admitted, in FIFO order among this
// process's callers, and returns a permit for them (Release is a no-op: the
// window frees them with time). It fails like Limiter.Acquire, with
// permits.ErrCostExceedsCapacity for a cost above the limit. To settle the
// grant, use AcquireGrant, or acquire through permits.All and call
// permits.Settle.
func (w *Window) Acquire(ctx context.Context, cost int64) (permits.Permit, error) {
	g, err := w.e.acquireGrant(w, ctx, w.key, opAcquire, cost)
	return g.Permit, err
}

// TryAcquire returns a permit for cost units if Redis admits them now and
// nobody in this process is waiting; it never waits for capacity, only for
// Redis's answer. A refusal is a *permits.RateLimitError whose RetryAfter
// is exact, to the microsecond, when nobody in this process waits, and
// otherwise a lower bound.
func (w *Window) TryAcquire(cost int64) (permits.Permit, error) {
	g, err := w.e.acquireGrant(w, context.Background(), w.key, opTry, cost)
	return g.Permit, err
}

// AcquireGrant is Acquire, returning the permit as a Grant for Settle and
// Refund.
func (w *Window) AcquireGrant(ctx context.Context, cost int64) (permits.Grant, error) {
	return w.e.acquireGrant(w, ctx, w.key, opAcquire, cost)
}

// TryAcquireGrant is TryAcquire, returning the permit as a Grant for
// Settle and Refund.
func (w *Window) TryAcquireGrant(cost int64) (permits.Grant, error) {
	return w.e.acquireGrant(w, context.Background(), w.key, opTry, cost)
}

// Settle settles g at actual units, once: from then on the window counts
// actual units at g's instant instead of g's cost, so that less gives the
// difference back to every process at once and more is charged as a debt
// that later admissions wait for. It waits for Redis's answer. A grant
// whose instant has left the window has nothing left to settle, and
// settles without effect. It fails with permits.ErrInvalidCost for actual
// < 0; permits.ErrUnknownGrant for a grant of another limiter, one of the
// fail-open limiter, or one settled or refunded before; permits.ErrClosed
// once the Window is closed; and an error matching ErrUnavailable when
// Redis cannot be asked (the grant then stays as it was).
func (w *Window) Settle(g permits.Grant, actual int64) error {
	if actual < 0 {
		return permits.InvalidCost(actual)
	}
	// An event of the limit or more fills every window that holds it, so
	// more than the limit changes nothing, and the script's sums stay
	// exact.
	actual = min(actual, w.e.win.limit)
	r, ok := w.settlement(g, opSettle, actual)
	if !ok {
		return permits.ErrUnknownGrant
	}
	if w.e.closed.Load() {
		return permits.ErrClosed
	}
	w.e.roundTrip(context.Background(), r)
	if r.state.Load() != rqDone {
		return permits.ErrClosed
	}
	switch r.status {
	case stRefunded, stKept:
		return nil
	case stUnavailable:
		return r.err
	case stClosed:
		return permits.ErrClosed
	}
	return permits.ErrUnknownGrant
}

// Refund takes g out of the window, for a grant that was not used, and
// reports whether it did: a grant of another limiter, one settled or
// refunded before, or one whose instant has left the window gives back
// nothing. It waits for Redis's answer.
func (w *Window) Refund(g permits.Grant) bool {
	r, ok := w.settlement(g, opRefund, 0)
	if !ok || w.e.closed.Load() {
		return false
	}
	w.e.roundTrip(context.Background(), r)
	return r.state.Load() == rqDone && r.status == stRefunded
}

// settlement makes the request that settles g at actual, if g is this
// Window's.
func (w *Window) settlement(g permits.Grant, o op, actual int64) (*request, bool) {
	mark, _, seq, ok := g.Ticket(w)
	if !ok || seq < 1 || g.Cost() < 1 {
		return nil, false
	}
	r := w.e.newRequest(context.Background(), w.key, o, g.Cost())
	r.refund = ident{w: mark.UnixMicro(), n: seq, ok: true}
	r.actual = actual
	return r, true
}

// Pause admits nothing before until, in any process sharing the window:
// what an API that answers 429 with Retry-After asks of all its clients
// (httplimit.Transport pauses the parts of its limiter that are Pausers,
// this one included). A later pause extends it, an earlier one does not
// shorten it. The reservations this process holds inside the pause go
// back to the window and their waiters are admitted anew after it (behind
// this process's waiters that hold reservations after the pause or are in
// a call under way, which Redis admits before them anyway); another
// process does the same with its next call for the key, whose answer
// carries the pause. until is taken at
// Redis's clock through the offset the key's latest call measured (the
// local wall clock before any call). Pause waits for Redis's answer, and
// holds in this process from then on; it fails with permits.ErrClosed
// once the Window is closed, and with an error matching ErrUnavailable
// when Redis cannot be asked, which changes nothing. An until already
// past changes nothing. Once Redis holds a pause, every later call this
// process makes for the key carries it again, so that a pause Redis loses
// (a restart without persistence, a failover, an eviction) is restored.
func (w *Window) Pause(until time.Time) error {
	if w.e.closed.Load() {
		return permits.ErrClosed
	}
	if !until.After(w.e.cfg.clock.Now()) {
		return nil
	}
	r := w.e.newRequest(context.Background(), w.key, opPause, 1)
	r.until = until
	w.e.roundTrip(context.Background(), r)
	switch {
	case r.state.Load() != rqDone, r.status == stClosed:
		return permits.ErrClosed
	case r.status == stUnavailable:
		return r.err
	}
	return nil
}

// Close is Limiter.Close: on a hung server it waits for a worker stuck
// inside go-redis at most WithCallTimeout.
func (w *Window) Close() error {
	w.e.close()
	return nil
}

// Stats returns the window's counters; Refunded counts the Refunds and
// Settles that Redis applied.
func (w *Window) Stats() Stats { return w.e.stats() }

// windowArgs completes a window's call: every Settle and Refund queued,
// and every slot nobody holds, given back.
func (e *engine) windowArgs(ks *keyState, kc *keyCall, reqs string, now int64) {
	var buf []byte
	entry := func(ep, id, amount int64, final bool) {
		fin := int64(0)
		if final {
			fin = 1
		}
		buf = appendEntry(buf, ep, id, amount, fin)
	}
	// Every call carries the pause this process holds, which Redis told
	// it of: Redis may have lost it since (a restart, a failover, an
	// eviction), and would then admit before it what this process sends
	// back for it (holdBack), call after call, until the pause is over.
	hold := ks.hold
	// Trims go before the callers' Settles and Refunds: one of the same
	// event in the same call then has the last word.
	for _, t := range ks.trims {
		entry(t.ep, t.id, t.cost, false)
	}
	kc.trims, ks.trims = ks.trims, nil
	for _, r := range ks.refunds {
		if r.op == opPause {
			kc.pauses = append(kc.pauses, r)
			hold = max(hold, r.actual)
			continue
		}
		kc.settles = append(kc.settles, r)
		entry(r.refund.w, r.refund.n, r.actual, true)
	}
	ks.refunds = nil
	kc.give = ks.unheld()
	for _, s := range kc.give {
		s.giving = true
		entry(s.ep, s.id, 0, false)
	}
	settles := string(buf)
	kc.args = []any{e.args[0], e.args[1], "0", settles, reqs, e.windowMoves(ks, kc, buf[:0], now), hold}
	if settles != "" {
		// A settlement or give-back applied twice would be reported as
		// settled before, or as gone (replay.go).
		kc.args = append(kc.args, e.nextCallID(), e.replayTTL())
		kc.keys = []string{ks.name, e.replayKey(ks)}
	}
}

// windowMoves asks the reservations held here to move earlier, appending
// them to buf: what any process settled or gave back since they were made
// may make room sooner. They go only with a call made anyway (one made for
// them alone would be made again at once), the earliest maxMoves of them,
// and not one due within two round trips, whose waiter would be granted
// late: a waiter is not granted until the answer says where its slot is.
func (e *engine) windowMoves(ks *keyState, kc *keyCall, buf []byte, now int64) string {
	going := len(kc.reqs) > 0 || len(kc.settles) > 0 || len(kc.give) > 0 || len(kc.pauses) > 0 || len(kc.trims) > 0
	for _, s := range ks.slots {
		if !going || len(kc.moves) == maxMoves {
			break
		}
		if s.holders > 0 && !s.used && !s.giving && s.at > now+2*e.rtt {
			s.moving = true
			kc.moves = append(kc.moves, s)
			buf = appendEntry(buf, s.ep, s.id)
		}
	}
	return string(buf)
}

// maxMoves bounds the reservations one call asks to move: each costs the
// script a walk of the events before it.
const maxMoves = 16

// unheld returns a window's slots that nobody holds and that were never
// granted: room reserved for waiters that gave up, which goes back to the
// window.
func (ks *keyState) unheld() []*slot {
	var give []*slot
	for _, s := range ks.slots {
		if s.holders == 0 && !s.used && !s.giving && !s.moving {
			give = append(give, s)
		}
	}
	return give
}

// settled applies what a window's call said of its settlements and
// give-backs, and returns the codes of its requests.
func (e *engine) settled(kc *keyCall) []int64 {
	ks := kc.ks
	for _, r := range kc.pauses {
		e.finish(r, stRefunded, 0, nil)
	}
	if kc.hold > ks.hold {
		ks.hold = kc.hold // a pause, this process's or another's: see holdBack
	}
	codes := kc.codes[len(kc.trims):] // a trim refused was settled by its holder first
	for i, r := range kc.settles {
		st := stKept
		switch codes[i] {
		case 1:
			st = stRefunded
			e.refunded.Add(1)
		case 0:
			st = stSettled
		}
		e.finish(r, st, 0, nil)
	}
	n := len(kc.settles)
	for i, s := range kc.give {
		if codes[n+i] == 1 {
			e.givenBack.Add(uint64(s.cost))
		}
	}
	if len(kc.give) > 0 {
		ks.slots = slices.DeleteFunc(ks.slots, func(s *slot) bool { return s.giving })
	}
	n += len(kc.give)
	e.moved(kc, codes[n:n+len(kc.moves)])
	return codes[n+len(kc.moves):]
}

// moved applies the answers to a window's moves: a reservation that moved
// falls due at its new instant, in local terms as an admission's
// (answered), never before the slot before it.
func (e *engine) moved(kc *keyCall, codes []int64) {
	ks := kc.ks
	off := ks.off
	for i, s := range kc.moves {
		s.moving = false
		if s.holders == 0 {
			e.markDirty(ks) // its waiter gave up meanwhile: deal it out, or give it back
		}
		if codes[i] <= 0 {
			continue
		}
		at := off + codes[i]*1000
		if j := slices.Index(ks.slots, s); j > 0 {
			at = max(at, ks.slots[j-1].at)
		}
		s.red = codes[i]
		if at < s.at {
			s.at = at
			e.moves.Add(1)
		}
	}
	if len(kc.moves) > 0 {
		// The timer, disarmed while they moved, is armed again; a pause
		// that came meanwhile is answered's to apply (holdBack), once for
		// the whole call.
		e.markTimed(ks)
	}
}

// holdBack sends again the waiters of a window's key holding slots that
// Redis admitted before its pause (this process's Pause, or one a reply
// told of): their slots go back to the window (unheld, and never dealt
// again: reassign skips slots before the hold), and they are admitted anew
// after the pause. A slot moving waits for its answer (moved). The line is
// then put back in the order reassign and grantDue rely on: waiters
// holding slots, then those in the call under way, then those to send,
// each in FIFO order; so a waiter sent again goes behind this process's
// waiters that hold reservations after the pause or are in a call under
// way, which Redis admits before it anyway.
func (e *engine) holdBack(ks *keyState) {
	moved := false
	for _, r := range ks.line {
		if r.phase != phReserved || r.slot.moving || r.slot.red >= ks.hold {
			continue
		}
		r.slot.holders--
		r.slot, r.phase, r.waited = nil, phPending, true
		ks.pending++
		moved = true
	}
	if !moved {
		return
	}
	rank := func(r *request) int {
		switch r.phase {
		case phReserved:
			return 0
		case phInflight:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(ks.line, func(a, b *request) int { return rank(a) - rank(b) })
	e.markReady(ks)
	e.markDirty(ks) // the slots sent back are given back with the next call
}

var (
	_ permits.Limiter = (*Window)(nil)
	_ permits.Settler = (*Window)(nil)
)
