package algorithms

import "time"

// LeakyBucket is the leaky bucket as a meter: each admitted cost pours that
// many units into a bucket of the given capacity, which leaks continuously at
// the leak rate; a cost is allowed when it fits without overflowing. It
// starts empty, so the first capacity units pass at once, and idle time only
// empties it, so after any idle spell at most capacity units pass at once.
//
// Its admissions are the same as TokenBucket(leak, capacity) and
// GCRA(leak, capacity); it reports them from the other side (the level
// rather than the tokens left). The level is exact and drained lazily on
// each decision: no timers. Not safe for concurrent use.
type LeakyBucket struct {
	capacity int64
	leak     Rate
	den      int64 // the level is whole + num/den units
	dec      int64 // one ns drains dec/den units
	drain    int64 // ns to drain from full

	tl    timeline
	level fixed // level at instant at
	at    int64
}

// NewLeakyBucket returns an empty bucket of capacity units leaking at leak.
// Like every constructor here it takes the rate first, then the size. It
// fails, matching ErrInvalidConfig, for an invalid rate, a capacity below 1,
// or a capacity that takes more than about 36 years to drain.
func NewLeakyBucket(leak Rate, capacity int64) (*LeakyBucket, error) {
	if err := leak.Validate(); err != nil {
		return nil, err
	}
	if err := positive("capacity", capacity); err != nil {
		return nil, err
	}
	if err := span(leak, capacity, "capacity"); err != nil {
		return nil, err
	}
	count, per := reduce(leak)
	drain, _ := mulDiv(capacity, per, count)
	return &LeakyBucket{capacity: capacity, leak: leak, den: per, dec: count, drain: drain.ceil()}, nil
}

// Capacity returns the bucket's size.
func (b *LeakyBucket) Capacity() int64 { return b.capacity }

// Clone returns a copy with the same state.
func (b *LeakyBucket) Clone() Algorithm { c := *b; return &c }

// AllowAt decides for cost units at now.
func (b *LeakyBucket) AllowAt(now time.Time, cost int64) Decision {
	n := b.tl.at(now)
	level := b.levelAt(n)
	room := fixed{b.capacity, 0}.sub(level, b.den)
	if cost < 1 || cost > b.capacity {
		return denyNever(room.whole, b.emptyAt(n, level))
	}
	need := fixed{cost, 0}
	if !room.less(need) {
		full := level.add(need, b.den)
		b.level, b.at = full, n
		return Decision{Allowed: true, Remaining: room.sub(need, b.den).whole, ResetAt: b.emptyAt(n, full)}
	}
	// Denied: wait until level + cost - capacity has leaked away, counted
	// from the stored instant as levelAt does; written as cost - (capacity -
	// level) so that it cannot overflow for capacities near MaxInt64.
	_, wait := need.sub(fixed{b.capacity, 0}.sub(b.level, b.den), b.den).div(b.den, b.dec)
	return Decision{RetryAt: b.tl.time(b.at + wait), Remaining: room.whole, ResetAt: b.emptyAt(n, level)}
}

// levelAt returns the level at instant n (ns since origin).
func (b *LeakyBucket) levelAt(n int64) fixed {
	elapsed := n - b.at
	if elapsed >= b.drain {
		return fixed{}
	}
	// elapsed < drain, so out < capacity: it fits, though it may exceed maxSpan.
	out, _ := mulDivAmount(elapsed, b.dec, b.den)
	if b.level.less(out) {
		return fixed{}
	}
	return b.level.sub(out, b.den)
}

// emptyAt is the instant the bucket, holding level at n, is empty again.
func (b *LeakyBucket) emptyAt(n int64, level fixed) time.Time {
	_, wait := level.div(b.den, b.dec)
	return b.tl.time(n + wait)
}
