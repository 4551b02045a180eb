package actor

import (
	"sync/atomic"
	"unsafe"
)

// counter is a statistics counter bumped by many goroutines at once, on the
// fast path too. One atomic word would be a cache line every core fights
// over on every decision, a cost larger than the decision itself; the
// counter spreads the adds over padded shards and sums them when read.
type counter struct {
	shards [counterShards]struct {
		n atomic.Uint64
		_ [56]byte // one cache line each
	}
}

const counterShards = 8

// add adds n to the shard of the calling goroutine's stack region. Distinct
// goroutines have distinct stacks, so concurrent callers mostly land on
// different shards; the choice only spreads contention, never correctness.
func (c *counter) add(n uint64) {
	var local byte
	i := uintptr(unsafe.Pointer(&local)) >> 13 % counterShards
	c.shards[i].n.Add(n)
}

// load returns the sum of the shards (0 for a nil counter). Concurrent
// adds may or may not be counted, as with a single atomic.
func (c *counter) load() uint64 {
	if c == nil {
		return 0
	}
	var sum uint64
	for i := range c.shards {
		sum += c.shards[i].n.Load()
	}
	return sum
}
