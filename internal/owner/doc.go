// Package owner is the one owner loop of sluice: the goroutine that owns a
// limiter's state, and the protocol by which callers reach it.
//
// The core knows when and in what order; a plug-in (a rate limiter, a
// pool, a lane set, a shard of keys) knows what a decision is:
//
//	callers                         owner goroutine (Run)
//	───────                         ─────────────────────
//	Send ──push──▶ inbox  ─┐        park until a wake-up, a poke or the timer
//	sendCancel ─▶ cancels ─┼─take─▶ Wake(poked)          the plug-in's reading
//	Poke ───────▶ poked   ─┘        (a) Cancel …         cancellations first
//	                                (b,c) Handle …       arrivals in order
//	RoundTrip ◀──reply─── Call ◀──  … Cancel            one cancelled in its batch, after it
//	                                (d,e) Schedule       due heads, expiry, publish
//	                                (f) arm the timer from Schedule's reading,
//	                                    or wake again at once if something fell due by it
//
// What the core holds, and nothing else does: the inbox (a lock-free stack
// of calls and a second one of cancellations, each pushed with one CAS and
// taken whole with one swap), the wake channel and the sleep protocol that
// lets most callers touch no channel at all, the round trip on each
// caller's own reply channel with cancellation as a message, the batch and
// its order, the one timer, and shutdown. A plug-in is told of each step
// through Plugin, whose methods are decisions, none a getter.
//
// The argument for each order is written where the order is kept: inbox.go
// (push, park and Close), roundtrip.go (cancellation and reuse) and
// loop.go (the wake-up).
package owner
