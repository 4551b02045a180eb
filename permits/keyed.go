package permits

import "context"

// KeyedLimiter is a limit per key: per user, per IP address, per API key,
// per account. Each key has its own quota and its own FIFO of waiters; keys
// do not wait for each other. Acquire waits, in order, until cost units are
// available for key or ctx ends; TryAcquire never waits. Both are safe for
// concurrent use in every implementation of sluice (package keyed in
// process, package redislimit across processes).
type KeyedLimiter[K comparable] interface {
	Acquire(ctx context.Context, key K, cost int64) (Permit, error)
	TryAcquire(key K, cost int64) (Permit, error)
}

// ForKey returns the Limiter of one key of lim, so that code written for a
// Limiter (Do, Wrap, All) can use a keyed one.
func ForKey[K comparable](lim KeyedLimiter[K], key K) Limiter { return forKey[K]{lim, key} }

type forKey[K comparable] struct {
	lim KeyedLimiter[K]
	key K
}

func (f forKey[K]) Acquire(ctx context.Context, cost int64) (Permit, error) {
	return f.lim.Acquire(ctx, f.key, cost)
}

func (f forKey[K]) TryAcquire(cost int64) (Permit, error) { return f.lim.TryAcquire(f.key, cost) }
