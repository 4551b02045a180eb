package algorithms

import "time"

// Receipt records one admission, so that the algorithm that made it can take
// it back if it goes unused (Refunder). An allowed Decision carries one. It
// is a value: keep it as the decision returned it. The zero Receipt refunds
// nothing.
type Receipt struct {
	// At is the instant the cost was admitted at: the instant decided at,
	// or the latest instant seen if that was earlier.
	At time.Time
	// Cost is the admitted cost.
	Cost int64
	// Mark, Frac and Seq are the algorithm's own record of where the
	// admission lies in its state (GCRA: its theoretical arrival time after
	// the admission; the windows: the event or window that counted it).
	// RefundAt reads them; a limiter that carries a receipt through code
	// that does not know this package copies them as they are.
	Mark time.Time
	Frac int64
	Seq  int64
}

// IsZero reports whether r records no admission.
func (r Receipt) IsZero() bool { return r.Cost == 0 }

// Refunder is implemented by algorithms that can take back an admission that
// was never used: a request that took its rate permit and then failed to get
// the rest of what it needed (permits.All), or a cost settled lower than the
// estimate. Every algorithm in this package implements it. Like AllowAt,
// RefundAt is for the single owner.
//
// RefundAt gives back, at now, what is left of the admission r records, and
// reports whether it gave anything back. The rule every algorithm keeps: a
// refund never lets the admissions that were not refunded exceed the
// algorithm's bound over any interval (for GCRA and the buckets, burst +
// floor(rate·d) over any interval of length d; for the windows, the limit
// per window). So only what later admissions have not already used comes
// back: GCRA and the buckets give back the part of the admission's slot in
// their schedule that is still in the future and that the admissions placed
// behind it can move into; the sliding window removes the cost from its
// event, which is exact whatever came after; the fixed window gives it back
// only while its window lasts. A receipt that was already refunded, or whose
// admission can no longer give anything back, changes nothing, so a second
// refund of one receipt is harmless. A receipt made by another algorithm is
// not detected: a limiter that owns several checks that itself.
//
// now must be at least every instant decided so far, TryAdmitAt's included
// (it does not record its instant): the rule gives back room only after now,
// and an admission at a later instant may already stand there. A limiter
// refunds at a fresh reading of its clock for that reason.
type Refunder interface {
	RefundAt(now time.Time, r Receipt) bool
}

var (
	_ Refunder = (*GCRA)(nil)
	_ Refunder = (*TokenBucket)(nil)
	_ Refunder = (*LeakyBucket)(nil)
	_ Refunder = (*SlidingWindow)(nil)
	_ Refunder = (*FixedWindow)(nil)
)

// refundBook remembers the receipts already refunded, for as long as they
// could still give something back, so that a second refund of one is a
// no-op. Its size follows the refunds still live, not the refunds ever made:
// the owner prunes it whenever it has doubled since the last prune.
type refundBook struct {
	spent map[receiptKey]struct{}
	kept  int // size after the last prune
}

type receiptKey struct {
	sec       int64
	nsec      int32
	frac, seq int64
}

func keyOf(r Receipt) receiptKey {
	return receiptKey{sec: r.Mark.Unix(), nsec: int32(r.Mark.Nanosecond()), frac: r.Frac, seq: r.Seq}
}

// spentAlready reports whether r was refunded before.
func (b *refundBook) spentAlready(r Receipt) bool {
	_, ok := b.spent[keyOf(r)]
	return ok
}

// record remembers r as refunded, first dropping every receipt for which
// live reports false, when the book has doubled since it was last pruned.
func (b *refundBook) record(r Receipt, live func(mark time.Time) bool) {
	if b.spent == nil {
		b.spent = make(map[receiptKey]struct{})
	}
	if len(b.spent) >= 2*b.kept+8 {
		for k := range b.spent {
			if !live(time.Unix(k.sec, int64(k.nsec))) {
				delete(b.spent, k)
			}
		}
		b.kept = len(b.spent)
	}
	b.spent[keyOf(r)] = struct{}{}
}

// clone returns a copy, so that a cloned algorithm refuses the same second
// refunds as the original.
func (b *refundBook) clone() refundBook {
	if len(b.spent) == 0 {
		return refundBook{}
	}
	c := refundBook{spent: make(map[receiptKey]struct{}, len(b.spent)), kept: b.kept}
	for k := range b.spent {
		c.spent[k] = struct{}{}
	}
	return c
}
