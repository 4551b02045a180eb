package algorithms

import "time"

// TokenBucket holds up to capacity tokens and refills them continuously at
// the refill rate; a cost is allowed when that many tokens are in the bucket,
// and takes them. It starts full. Idle time refills the bucket only up to
// capacity, so after any idle spell at most capacity units pass at once.
//
// Its admissions are the same as GCRA(refill, capacity): the two are dual
// descriptions of one conformance rule. The token count is exact (whole
// tokens and a fraction of one) and refilled lazily on each decision: no
// timers. Not safe for concurrent use.
type TokenBucket struct {
	capacity int64
	refill   Rate
	den      int64 // tokens are whole + num/den
	inc      int64 // one ns adds inc/den tokens
	fill     int64 // ns to refill from empty

	tl     timeline
	tokens fixed // tokens at instant at
	at     int64
}

// NewTokenBucket returns a full bucket of capacity tokens refilled at refill.
// Like every constructor here it takes the rate first, then the size. It
// fails, matching ErrInvalidConfig, for an invalid rate, a capacity below 1,
// or a capacity whose refill takes more than about 36 years.
func NewTokenBucket(refill Rate, capacity int64) (*TokenBucket, error) {
	if err := refill.Validate(); err != nil {
		return nil, err
	}
	if err := positive("capacity", capacity); err != nil {
		return nil, err
	}
	if err := span(refill, capacity, "capacity"); err != nil {
		return nil, err
	}
	count, per := reduce(refill)
	fill, _ := mulDiv(capacity, per, count)
	return &TokenBucket{capacity: capacity, refill: refill, den: per, inc: count, fill: fill.ceil(),
		tokens: fixed{capacity, 0}}, nil
}

// Capacity returns the bucket's size.
func (b *TokenBucket) Capacity() int64 { return b.capacity }

// Clone returns a copy with the same state.
func (b *TokenBucket) Clone() Algorithm { c := *b; return &c }

// AllowAt decides for cost tokens at now.
func (b *TokenBucket) AllowAt(now time.Time, cost int64) Decision {
	n := b.tl.at(now)
	tokens := b.level(n)
	if cost < 1 || cost > b.capacity {
		return denyNever(tokens.whole, b.fullAt(n, tokens))
	}
	need := fixed{cost, 0}
	if need.less(tokens) || need == tokens {
		left := tokens.sub(need, b.den)
		b.tokens, b.at = left, n
		return Decision{Allowed: true, Remaining: left.whole, ResetAt: b.fullAt(n, left)}
	}
	// Denied: the deficit refills at inc/den tokens per ns. Counting from the
	// stored instant keeps the arithmetic identical to level's.
	_, wait := need.sub(b.tokens, b.den).div(b.den, b.inc)
	return Decision{RetryAt: b.tl.time(b.at + wait), Remaining: tokens.whole, ResetAt: b.fullAt(n, tokens)}
}

// level returns the tokens at instant n (ns since origin).
func (b *TokenBucket) level(n int64) fixed {
	elapsed := n - b.at
	if elapsed >= b.fill {
		return fixed{b.capacity, 0}
	}
	// elapsed < fill, so add < capacity: it fits, though it may exceed
	// maxSpan, and comparing it with the room left cannot overflow where
	// tokens + add could.
	add, _ := mulDivAmount(elapsed, b.inc, b.den)
	if room := (fixed{b.capacity, 0}).sub(b.tokens, b.den); !add.less(room) {
		return fixed{b.capacity, 0}
	}
	return b.tokens.add(add, b.den)
}

// fullAt is the instant the bucket, holding tokens at n, is full again.
func (b *TokenBucket) fullAt(n int64, tokens fixed) time.Time {
	_, wait := fixed{b.capacity, 0}.sub(tokens, b.den).div(b.den, b.inc)
	return b.tl.time(n + wait)
}
