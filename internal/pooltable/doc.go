// Package pooltable is the table of adaptive pools that httplimit's
// Transport (one per host) and Shedder (one per route) and grpclimit's
// Shedder (one per method) and Client (one per target) keep: a map from a
// key to an *actor.AdaptivePool, made at the key's first use with a
// controller of its own (a controller keeps state, so keys never share
// one).
//
// The table is bounded. Each pool costs a goroutine and about 2 KiB, and
// keys come from outside: a client calling many hosts, a server whose key
// function hostile paths can make unique. So at most Max keys get a pool
// of their own; every key seen after the table is full shares one more,
// the overflow pool, named Overflow. Keys are never evicted: a key that
// has a pool keeps it until Close, so its controller's state (the limit
// it learnt) is never lost to a burst of new keys, and a key in the
// overflow stays there. The overflow pool limits the keys past the bound
// together, which is the price of the bound: better one shared limit for
// the stragglers than a goroutine per hostile key.
//
// A Table is safe for concurrent use. Get reads a map that is never
// changed once published, without a lock; adding a key copies it under a
// mutex. Keys are few and each is added once, so the copies cost little
// (Max keys cost Max²/2 entry copies in all), and the read path takes no
// lock that parallel requests would contend on.
//
// Close closes every pool and makes Get fail with permits.ErrClosed. A
// caller that got a pool before Close and uses it after gets that pool's
// own errors, never a panic: its waiters and later Acquires fail with
// permits.ErrClosed, and the permits it holds stay valid, harmless to
// end. Close returns once every pool's goroutine has exited.
package pooltable
