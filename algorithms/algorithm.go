package algorithms

import "time"

// Decision is an algorithm's answer for one cost at one instant.
type Decision struct {
	// Allowed reports whether the cost was admitted (and the state updated).
	Allowed bool
	// RetryAt, when denied, is the earliest instant at which the same cost
	// would be allowed if nothing else is admitted first. It is the zero Time
	// when the cost can never be allowed (cost < 1 or cost > Capacity).
	RetryAt time.Time
	// Remaining is the number of whole cost units still admissible at this
	// instant after this decision.
	Remaining int64
	// ResetAt is the instant at which the state is back to full capacity if
	// nothing else is admitted. It is never before the instant decided at.
	ResetAt time.Time
	// NextAt, for the windows, is the instant at which one unit more than
	// Remaining comes back if nothing else is admitted: when the oldest
	// admission leaves a sliding window, when a fixed one ends. It is the
	// zero Time when nothing is in use, and for the algorithms that refill
	// at a steady rate, whose next unit comes one unit's time after the
	// state last moved (a server's RateLimit field computes it from the
	// rate).
	NextAt time.Time
	// Receipt, when Allowed, records the admission so that the algorithm can
	// take it back if it goes unused (Refunder). It is the zero Receipt
	// otherwise.
	Receipt Receipt
}

// Algorithm decides whether cost units may pass at an instant. The instant is
// an argument: algorithms never read a clock, start goroutines or block. An
// instant earlier than the latest one an algorithm has seen counts as that
// latest one (no time has passed). No instant, however far in the past or
// the future, stops an algorithm from telling later instants apart, and no
// decision names a RetryAt or ResetAt before the instant it was made at.
//
// Implementations in this package are not safe for concurrent use unless
// their documentation says otherwise: a limiter owns one and serialises the
// calls (package actor).
type Algorithm interface {
	// AllowAt decides for cost units at now and updates the state only when
	// the decision is Allowed.
	AllowAt(now time.Time, cost int64) Decision
	// Capacity is the largest cost ever admissible in one decision.
	Capacity() int64
}

// Cloner is implemented by algorithms that can copy their state, so that an
// owner can predict future decisions (when will the tenth waiter in a queue be
// admitted?) without touching the real state. Every algorithm in this package
// implements it.
type Cloner interface {
	Clone() Algorithm
}

// Gated is implemented by algorithms whose whole state can be one atomic
// word, so that goroutines other than the owner may decide without sending
// it a message: the fast path of a limiter. GCRA, TokenBucket, LeakyBucket
// and FixedWindow implement it; LockFree says whether a configuration has
// the one-word form. The gate lives in the same word as the
// state; the owner closes it, in the same atomic step as a denial, while it
// has waiters, so that no fast-path caller can pass a waiter that was denied
// first (FIFO). AllowAt keeps the gate as it is.
type Gated interface {
	Algorithm
	// TryAllowAt decides like AllowAt, from any goroutine, but only while the
	// gate is open; open is false, and nothing changed, when it is closed or
	// when this configuration has no lock-free form.
	TryAllowAt(now time.Time, cost int64) (d Decision, open bool)
	// TryAdmitAt is TryAllowAt reduced to what a fast path needs: whether
	// cost was admitted and, if not, the wait until it would be (> 0). It
	// reports open false also for a cost that can never be admitted.
	TryAdmitAt(now time.Time, cost int64) (ok bool, wait time.Duration, open bool)
	// AllowOrCloseAt decides like AllowAt and, when it denies a cost that could
	// ever be allowed, closes the gate in the same atomic step.
	AllowOrCloseAt(now time.Time, cost int64) Decision
	// OpenGate reopens the gate; the owner calls it once it has no waiters.
	OpenGate()
	// CloseGate closes the gate, whatever the state: the owner calls it
	// before it reads the clock for a change of the state of its own (a
	// refund, a settle, a new rate), so that no lock-free decision lands
	// between its reading and the change, at a later instant than the one
	// the change is made at.
	CloseGate()
	// LockFree reports whether this configuration has a lock-free form at
	// all; when it is false, TryAllowAt and TryAdmitAt always report the
	// gate closed and a caller need not read the clock for them.
	LockFree() bool
}

// Settler is implemented by algorithms whose admissions can be settled
// with the cost they turned out to have: a call admitted for an estimate of
// 1,000 tokens that used 1,400. SettleAt settles the admission r records at
// actual units, once (a settled receipt refunds nothing more): less than
// admitted gives the difference back by the refund rule (Refunder), more is
// charged as debt, so that later admissions wait for it. It reports false,
// changing nothing, for a receipt settled or refunded before, for as long
// as the algorithm remembers it: GCRA and the buckets forget a receipt once
// its slot lies in the past (a refund could give nothing back then), so a
// second settle above the cost long after the first charges again. Settle
// a receipt once. Every algorithm in this package implements it. Owner only.
type Settler interface {
	SettleAt(now time.Time, r Receipt, actual int64) bool
}

// Tunable is implemented by algorithms whose rate (and burst or capacity,
// for GCRA and the buckets) can change while they run: an API that lowers
// its quota, a client that learns its share. Nothing already admitted is
// taken back: the units still owed are paid at the new rate, and fast-path
// callers see the new configuration atomically. Receipts made before a
// change give nothing back afterwards. The windows have no burst: their
// SetBurstAt returns an error matching ErrInvalidConfig. Owner only.
type Tunable interface {
	SetRateAt(now time.Time, rate Rate) error
	SetBurstAt(now time.Time, burst int64) error
}

// denyNever is the decision for a cost that no waiting can make admissible.
func denyNever(remaining int64, resetAt time.Time) Decision {
	return Decision{Remaining: remaining, ResetAt: resetAt}
}

var (
	_ Gated = (*GCRA)(nil)
	_ Gated = (*TokenBucket)(nil)
	_ Gated = (*LeakyBucket)(nil)
	_ Gated = (*FixedWindow)(nil)

	_ Cloner = (*GCRA)(nil)
	_ Cloner = (*TokenBucket)(nil)
	_ Cloner = (*LeakyBucket)(nil)
	_ Cloner = (*SlidingWindow)(nil)
	_ Cloner = (*FixedWindow)(nil)
)
