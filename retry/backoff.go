package retry

import (
	"math/bits"
	"math/rand/v2"
	"time"
)

// jitter draws the random part of the waits of one Do.
type jitter struct {
	pcg    rand.PCG
	seeded bool
}

// below returns a uniform draw from [0, n].
func (j *jitter) below(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	if !j.seeded {
		return rand.Uint64N(n + 1)
	}
	// Lemire's multiply-shift: the high word of x·(n+1) for a uniform x is
	// uniform on [0, n] up to a bias of (n+1)/2^64, which for waits below 2^63
	// ns is far below anything a test can observe. n+1 cannot overflow: n
	// is a duration.
	hi, _ := bits.Mul64(j.pcg.Uint64(), n+1)
	return hi
}

// ceiling returns min(cap, base·2^(k-1)) for retry k >= 1, without
// overflowing.
func (c *config) ceiling(k int) time.Duration {
	if c.base == 0 {
		return 0
	}
	shift := k - 1
	if shift >= 63 || c.base > c.cap>>shift {
		return c.cap
	}
	return c.base << shift
}

// backoff returns the jittered wait before retry k: uniform on
// [0, ceiling(k)] (full jitter).
func (c *config) backoff(k int, j *jitter) time.Duration {
	return time.Duration(j.below(uint64(c.ceiling(k))))
}
