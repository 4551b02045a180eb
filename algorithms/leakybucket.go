package algorithms

import "time"

// LeakyBucket is the leaky bucket as a meter: each admitted cost pours that
// many units into a bucket of the given capacity, which leaks continuously at
// the leak rate; a cost is allowed when it fits without overflowing. It
// starts empty, so the first capacity units pass at once, and idle time only
// empties it, so after any idle spell at most capacity units pass at once.
//
// Its admissions are the same as TokenBucket(leak, capacity) and
// GCRA(leak, capacity); it reports them from the other side: Remaining is
// the whole units of room left, ResetAt the instant the bucket is empty
// again. The level is exact and drained lazily on each decision: no timers.
// Like GCRA it implements Gated, with the same one-word form for the same
// configurations: TryAllowAt and TryAdmitAt are safe from any goroutine;
// the other methods are for the single owner.
type LeakyBucket struct{ c tatCore }

// NewLeakyBucket returns an empty bucket of capacity units leaking at leak.
// Like every constructor here it takes the rate first, then the size. It
// fails, matching ErrInvalidConfig, for an invalid rate, a capacity below 1,
// or a capacity that takes more than about 36 years to drain.
func NewLeakyBucket(leak Rate, capacity int64) (*LeakyBucket, error) {
	a := &LeakyBucket{}
	if err := a.c.init(leak, capacity, "capacity"); err != nil {
		return nil, err
	}
	return a, nil
}

// Capacity returns the bucket's size.
func (b *LeakyBucket) Capacity() int64 { return b.c.config().burst }

// Rate returns the leak rate.
func (b *LeakyBucket) Rate() Rate { return b.c.config().rate }

// Clone returns a copy with the same state; the copy's gate is open.
func (b *LeakyBucket) Clone() Algorithm {
	c := &LeakyBucket{}
	c.c.cloneInto(&b.c)
	return c
}

// AllowAt decides for cost units at now. Owner only.
func (b *LeakyBucket) AllowAt(now time.Time, cost int64) Decision {
	var d Decision
	b.c.decide(&d, now, cost, false, false)
	return d
}

// LockFree reports whether this configuration keeps its state in one
// atomic word (see GCRA.LockFree).
func (b *LeakyBucket) LockFree() bool { return b.c.config().word }

// TryAllowAt decides for cost units at now while the gate is open; safe
// from any goroutine.
func (b *LeakyBucket) TryAllowAt(now time.Time, cost int64) (Decision, bool) {
	var d Decision
	ok := b.c.decide(&d, now, cost, true, false)
	return d, ok
}

// TryAdmitAt is the lean form of TryAllowAt (see GCRA.TryAdmitAt).
func (b *LeakyBucket) TryAdmitAt(now time.Time, cost int64) (ok bool, wait time.Duration, open bool) {
	return b.c.tryAdmit(now, cost)
}

// AllowOrCloseAt decides like AllowAt and closes the gate on a denial that
// waiting can cure. Owner only.
func (b *LeakyBucket) AllowOrCloseAt(now time.Time, cost int64) Decision {
	var d Decision
	b.c.decide(&d, now, cost, false, true)
	return d
}

// OpenGate reopens the gate. Owner only.
func (b *LeakyBucket) OpenGate() { b.c.openGate() }

// CloseGate closes the gate. Owner only.
func (b *LeakyBucket) CloseGate() { b.c.closeGate() }

// RefundAt takes out of the bucket the units of the admission r records
// that the admissions after it have not already had to wait for (see
// Refunder and GCRA.RefundAt). Owner only.
func (b *LeakyBucket) RefundAt(now time.Time, r Receipt) bool { return b.c.refundAll(now, r) }

// SettleAt settles the admission r records at actual units, once: the
// difference is given back by the refund rule when actual is less, and
// charged as debt when it is more (later admissions wait for it). A
// receipt settled or refunded before is refused while the book of spent
// receipts holds it, at least until its slot in the schedule (r.Mark) has
// passed; a repeat after that is charged again, so settle each receipt
// once. Owner only.
func (b *LeakyBucket) SettleAt(now time.Time, r Receipt, actual int64) bool {
	return b.c.settle(now, r, actual)
}

// SetRateAt changes the rate at now, keeping the capacity; SetBurstAt changes the
// capacity, keeping the rate. What was admitted stays admitted: the units still
// owed are paid at the new rate. Fast-path callers see the change
// atomically. Receipts made before give nothing back afterwards. Owner only.
func (b *LeakyBucket) SetRateAt(now time.Time, rate Rate) error {
	return b.c.reconfigure(now, rate, b.c.config().burst, "capacity")
}

// SetBurstAt changes the capacity at now; see SetRateAt.
func (b *LeakyBucket) SetBurstAt(now time.Time, capacity int64) error {
	return b.c.reconfigure(now, b.c.config().rate, capacity, "capacity")
}
