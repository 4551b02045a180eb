package actor

import (
	"context"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// Refund gives back a grant that was not used. The owner applies its
// algorithm's RefundAt at the instant it handles the refund, which gives
// back only what the admissions after the grant have not already used
// (package algorithms says, for each algorithm, what comes back), and the
// waiters it lets in are granted at once. Refund waits for the owner, so a
// TryAcquire after it sees the capacity.
//
// It reports whether anything came back. A grant refunded before, a grant
// from another limiter, the zero Grant, a closed limiter and an algorithm
// that does not implement algorithms.Refunder all give back nothing and
// change nothing.
func (l *Limiter) Refund(g permits.Grant) bool {
	mark, frac, seq, ok := g.Ticket(l)
	if !ok || g.Cost() < 1 {
		return false
	}
	if _, ok := l.rate.alg.(algorithms.Refunder); !ok {
		return false
	}
	r := l.rt
	if r.o.Closed() {
		return false
	}
	c := r.newCallFor(context.Background(), opRefund, g.Cost(), r.stamp(), false)
	c.ext().rc = algorithms.Receipt{At: g.At, Cost: g.Cost(), Mark: mark, Frac: frac, Seq: seq}
	if r.roundTrip(context.Background(), c, true).status != stGranted {
		return false
	}
	r.refunded.add(1)
	return true
}
