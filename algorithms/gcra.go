package algorithms

import "time"

// GCRA is the Generic Cell Rate Algorithm in its virtual-scheduling form: it
// keeps a theoretical arrival time (TAT), the instant at which the stream
// would be idle again if it had been paced exactly at the rate. A cost c
// moves the TAT c emission intervals (Per/Count) into the future, and is
// allowed when the new TAT is at most burst intervals after now. Idle time
// is never banked: a TAT in the past is first brought up to now.
//
// With burst 1 it paces strictly, one emission interval apart; with burst b
// it admits b units at once from idle and at most b + floor(rate·d) units
// over any closed interval of length d.
//
// Decisions are exact to the nanosecond at every rate, 3/s and 30/s
// included: time is counted in fractions of a nanosecond that make the
// emission interval whole. For every rate of up to 2^30 units per period
// (after dividing Count and Per by their common divisor) the whole state is
// one atomic word, and GCRA implements Gated: TryAllowAt and TryAdmitAt are
// safe from any goroutine, beside the single owner's AllowAt,
// AllowOrCloseAt, OpenGate and RefundAt. LockFree reports which form a
// configuration has.
type GCRA struct{ c tatCore }

// NewGCRA returns a GCRA that admits rate with bursts of up to burst units.
// It fails, matching ErrInvalidConfig, for an invalid rate, a burst below 1,
// or a burst whose span burst·Per/Count exceeds about 36 years.
func NewGCRA(rate Rate, burst int64) (*GCRA, error) {
	a := &GCRA{}
	if err := a.c.init(rate, burst, "burst"); err != nil {
		return nil, err
	}
	return a, nil
}

// Capacity returns the burst: the largest cost admissible at once.
func (g *GCRA) Capacity() int64 { return g.c.config().burst }

// Rate returns the configured rate.
func (g *GCRA) Rate() Rate { return g.c.config().rate }

// Clone returns a copy of the algorithm with the same state; the copy's gate
// is open.
func (g *GCRA) Clone() Algorithm {
	c := &GCRA{}
	c.c.cloneInto(&g.c)
	return c
}

// AllowAt decides for cost units at now. Owner only.
func (g *GCRA) AllowAt(now time.Time, cost int64) Decision {
	var d Decision
	g.c.decide(&d, now, cost, false, false)
	return d
}

// LockFree reports whether this configuration keeps its state in one
// atomic word, so that TryAllowAt and TryAdmitAt can decide from any
// goroutine. Otherwise they always report the gate closed.
func (g *GCRA) LockFree() bool { return g.c.config().word }

// TryAllowAt decides for cost units at now while the gate is open. It is
// safe for concurrent use with itself and with the owner's calls.
func (g *GCRA) TryAllowAt(now time.Time, cost int64) (Decision, bool) {
	var d Decision
	ok := g.c.decide(&d, now, cost, true, false)
	return d, ok
}

// TryAdmitAt is the lean form of TryAllowAt for a limiter's fast path: it
// reports only whether cost was admitted and, if not, how long after now the
// same cost would be (wait > 0). It computes neither Remaining nor ResetAt
// nor a Receipt, and does not record now as the latest instant seen.
func (g *GCRA) TryAdmitAt(now time.Time, cost int64) (ok bool, wait time.Duration, open bool) {
	return g.c.tryAdmit(now, cost)
}

// AllowOrCloseAt decides for cost units at now and, when it denies a cost
// that could be allowed later, closes the gate in the same step. Owner only.
func (g *GCRA) AllowOrCloseAt(now time.Time, cost int64) Decision {
	var d Decision
	g.c.decide(&d, now, cost, false, true)
	return d
}

// OpenGate reopens the gate. Owner only.
func (g *GCRA) OpenGate() { g.c.openGate() }

// CloseGate closes the gate. Owner only.
func (g *GCRA) CloseGate() { g.c.closeGate() }

// RefundAt gives back what is left of the admission r records: the part of
// its slot in the schedule that is still ahead of now and that the
// admissions placed behind it can move into (see Refunder). Owner only;
// safe beside fast-path callers.
func (g *GCRA) RefundAt(now time.Time, r Receipt) bool { return g.c.refundAll(now, r) }

// SettleAt settles the admission r records at actual units, once: the
// difference is given back by the refund rule when actual is less, and
// charged as debt when it is more (later admissions wait for it). A
// receipt settled or refunded before is refused while the book of spent
// receipts holds it, at least until its slot in the schedule (r.Mark) has
// passed; a repeat after that is charged again, so settle each receipt
// once. Owner only.
func (g *GCRA) SettleAt(now time.Time, r Receipt, actual int64) bool {
	return g.c.settle(now, r, actual)
}

// SetRateAt changes the rate at now, keeping the burst; SetBurstAt changes the
// burst, keeping the rate. What was admitted stays admitted: the units still
// owed are paid at the new rate. Fast-path callers see the change
// atomically. Receipts made before give nothing back afterwards. Owner only.
func (g *GCRA) SetRateAt(now time.Time, rate Rate) error {
	return g.c.reconfigure(now, rate, g.c.config().burst, "burst")
}

// SetBurstAt changes the burst at now; see SetRateAt.
func (g *GCRA) SetBurstAt(now time.Time, burst int64) error {
	return g.c.reconfigure(now, g.c.config().rate, burst, "burst")
}
