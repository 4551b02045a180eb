package algorithms

import "time"

// TokenBucket holds up to capacity tokens and refills them continuously at
// the refill rate; a cost is allowed when that many tokens are in the bucket,
// and takes them. It starts full. Idle time refills the bucket only up to
// capacity, so after any idle spell at most capacity units pass at once.
//
// Its admissions are the same as GCRA(refill, capacity): the two are dual
// descriptions of one conformance rule, and TokenBucket is that GCRA,
// reporting Remaining as the whole tokens left and ResetAt as the instant
// the bucket is full again. It is exact (whole tokens and a fraction of one)
// and refilled lazily on each decision: no timers. Like GCRA it implements
// Gated, with the same one-word form for the same configurations: the
// decisions of TryAllowAt and TryAdmitAt are safe from any goroutine; the
// other methods are for the single owner.
type TokenBucket struct{ c tatCore }

// NewTokenBucket returns a full bucket of capacity tokens refilled at refill.
// Like every constructor here it takes the rate first, then the size. It
// fails, matching ErrInvalidConfig, for an invalid rate, a capacity below 1,
// or a capacity whose refill takes more than about 36 years.
func NewTokenBucket(refill Rate, capacity int64) (*TokenBucket, error) {
	a := &TokenBucket{}
	if err := a.c.init(refill, capacity, "capacity"); err != nil {
		return nil, err
	}
	return a, nil
}

// Capacity returns the bucket's size.
func (b *TokenBucket) Capacity() int64 { return b.c.config().burst }

// Rate returns the refill rate.
func (b *TokenBucket) Rate() Rate { return b.c.config().rate }

// Clone returns a copy with the same state; the copy's gate is open.
func (b *TokenBucket) Clone() Algorithm {
	c := &TokenBucket{}
	c.c.cloneInto(&b.c)
	return c
}

// AllowAt decides for cost tokens at now. Owner only.
func (b *TokenBucket) AllowAt(now time.Time, cost int64) Decision {
	var d Decision
	b.c.decide(&d, now, cost, false, false)
	return d
}

// LockFree reports whether this configuration keeps its state in one
// atomic word (see GCRA.LockFree).
func (b *TokenBucket) LockFree() bool { return b.c.config().word }

// TryAllowAt decides for cost tokens at now while the gate is open; safe
// from any goroutine.
func (b *TokenBucket) TryAllowAt(now time.Time, cost int64) (Decision, bool) {
	var d Decision
	ok := b.c.decide(&d, now, cost, true, false)
	return d, ok
}

// TryAdmitAt is the lean form of TryAllowAt (see GCRA.TryAdmitAt).
func (b *TokenBucket) TryAdmitAt(now time.Time, cost int64) (ok bool, wait time.Duration, open bool) {
	return b.c.tryAdmit(now, cost)
}

// AllowOrCloseAt decides like AllowAt and closes the gate on a denial that
// waiting can cure. Owner only.
func (b *TokenBucket) AllowOrCloseAt(now time.Time, cost int64) Decision {
	var d Decision
	b.c.decide(&d, now, cost, false, true)
	return d
}

// OpenGate reopens the gate. Owner only.
func (b *TokenBucket) OpenGate() { b.c.openGate() }

// CloseGate closes the gate. Owner only.
func (b *TokenBucket) CloseGate() { b.c.closeGate() }

// RefundAt puts back the tokens of the admission r records that the
// admissions after it have not already had to wait for (see Refunder and
// GCRA.RefundAt). Owner only.
func (b *TokenBucket) RefundAt(now time.Time, r Receipt) bool { return b.c.refundAll(now, r) }

// SettleAt settles the admission r records at actual units, once: the
// difference is given back by the refund rule when actual is less, and
// charged as debt when it is more (later admissions wait for it). A
// receipt settled or refunded before is refused while the book of spent
// receipts holds it, at least until its slot in the schedule (r.Mark) has
// passed; a repeat after that is charged again, so settle each receipt
// once. Owner only.
func (b *TokenBucket) SettleAt(now time.Time, r Receipt, actual int64) bool {
	return b.c.settle(now, r, actual)
}

// SetRateAt changes the rate at now, keeping the capacity; SetBurstAt changes the
// capacity, keeping the rate. What was admitted stays admitted: the units still
// owed are paid at the new rate. Fast-path callers see the change
// atomically. Receipts made before give nothing back afterwards. Owner only.
func (b *TokenBucket) SetRateAt(now time.Time, rate Rate) error {
	return b.c.reconfigure(now, rate, b.c.config().burst, "capacity")
}

// SetBurstAt changes the capacity at now; see SetRateAt.
func (b *TokenBucket) SetBurstAt(now time.Time, capacity int64) error {
	return b.c.reconfigure(now, b.c.config().rate, capacity, "capacity")
}
