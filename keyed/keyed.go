package keyed

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"reflect"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/owner"
	"github.com/sluicehq/sluice/internal/quota"
	"github.com/sluicehq/sluice/permits"
)

// Limiter is a rate limit per key. Each key has its own algorithm state,
// made by the constructor New was given the first time the key is used
// (and again after the key has gone idle and been dropped), and its own
// strict FIFO of waiters; keys never wait for each other.
//
// Per key it behaves as an actor.Limiter owning the key's algorithm:
// waiters are granted in arrival order at their scheduled instants; a
// cancelled waiter leaves the queue wherever it is and gives its capacity
// back; an Acquire whose deadline (or WithMaxWait) comes before its
// predicted grant fails at once with an error matching both
// permits.ErrRateLimited and context.DeadlineExceeded; TryAcquire never
// waits and its RetryAfter is exact; Close fails every waiter with
// permits.ErrClosed.
//
// A key whose state is back to full capacity and that nobody waits on is
// dropped (by its owner's next pass over its table: at the instant for a
// small table, within about 2µs a slot for a large one), so memory follows
// the keys in use. When every key has the same GCRA or bucket, a key's
// state is one word, a key nobody waits on costs a 16-byte slot, and its
// fast path takes no lock (see the package doc; two keys of one 64-bit
// hash share a limit). A Limiter is safe for concurrent use. Close it
// when done: it owns its shards' goroutines.
type Limiter[K comparable] struct {
	newAlg func(K) (algorithms.Algorithm, error)
	cfg    config
	epoch  time.Time
	seed   maphash.Seed
	typed  bool // K holds interface values: their types are hashed too (keyhash.go)
	shards []*shard[K]
	mask   uint64
	once   sync.Once

	cellCfg atomic.Pointer[cellConfig]

	closed  atomic.Bool
	keys    atomic.Int64 // live keys
	waiting atomic.Int64 // Acquires sent and not yet answered
	// stopAtOnce is set when the observer reads the shards' counts of
	// Acquires granted on arrival itself (countAtOnce).
	stopAtOnce func()
	stopOnce   sync.Once
}

// New returns a Limiter that makes the algorithm of each key with newAlg,
// which must return a new algorithm on every call: the Limiter owns it
// from then on. newAlg may return different algorithms for different keys
// (a larger quota for some users); an error it returns is returned, wrapped,
// to the caller of the request that made the key. The first GCRA,
// TokenBucket or LeakyBucket with a lock-free form that newAlg returns sets
// the limiter's shared configuration: every key whose new algorithm has
// the same rate and burst keeps only a cell of it (the algorithm is
// dropped), and decides exactly alike. New starts the shards'
// goroutines; it fails, matching ErrInvalidConfig, for a nil newAlg and
// invalid options. Nil options are ignored.
func New[K comparable](newAlg func(K) (algorithms.Algorithm, error), opts ...Option) (*Limiter[K], error) {
	if newAlg == nil {
		return nil, invalid("nil algorithm constructor")
	}
	cfg := defaults()
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l := &Limiter[K]{newAlg: newAlg, cfg: cfg, epoch: cfg.clock.Now(), seed: maphash.MakeSeed(), mask: uint64(cfg.shards - 1)}
	l.typed = holdsInterface(reflect.TypeFor[K]())
	l.shards = make([]*shard[K], cfg.shards)
	for i := range l.shards {
		s := &shard[K]{l: l, idx: i, sw: sweep{due: never, started: math.MinInt64 / 2}}
		s.tab.Store(newTable(minSlots))
		l.shards[i] = s
		s.o.Init(l.stamp, func(d time.Duration) owner.Timer { return cfg.clock.NewTimer(d) })
		s.o.Start(pprof.Labels("sluice.limiter", cfg.name, "sluice.shard", strconv.Itoa(i)), s)
	}
	l.countAtOnce()
	return l, nil
}

// NewGCRA returns a Limiter that gives every key its own GCRA of rate and
// burst: the common case of New, in the shape of redislimit.NewKeyed, so
// that a limit moves between one process and Redis by its constructor
// alone. An invalid rate or burst fails here, matching ErrInvalidConfig,
// instead of at each key's first request.
func NewGCRA[K comparable](rate algorithms.Rate, burst int64, opts ...Option) (*Limiter[K], error) {
	if _, err := algorithms.NewGCRA(rate, burst); err != nil {
		return nil, err
	}
	return New(func(K) (algorithms.Algorithm, error) { return algorithms.NewGCRA(rate, burst) }, opts...)
}

// Acquire waits until cost units are granted for key, in FIFO order among
// the key's waiters, and returns a permit for them (Release is a no-op).
//
// It fails at once, without queuing, with ctx.Err() if ctx is already
// done, with permits.ErrInvalidCost for cost < 1,
// permits.ErrCostExceedsCapacity for cost above the key's capacity,
// permits.ErrClosed once the limiter is closed, ErrTooManyKeys for a new
// key beyond WithMaxKeys, and the constructor's error if it failed. It
// fails at once with a *permits.RateLimitError when the predicted grant is
// later than ctx's deadline (the error then also matches
// context.DeadlineExceeded), later than WithMaxWait allows, or the key's
// queue is full (WithMaxQueue). If ctx ends while it waits, it leaves the
// queue and returns ctx.Err(); if the grant and the cancellation race and
// the grant wins, it returns the permit and a nil error.
func (l *Limiter[K]) Acquire(ctx context.Context, key K, cost int64) (permits.Permit, error) {
	p, _, err := l.acquire(ctx, key, cost, false)
	return p, err
}

// AcquireQuota is Acquire, returning with the permit or the refusal the
// key's Quota as of the grant or the refusal.
func (l *Limiter[K]) AcquireQuota(ctx context.Context, key K, cost int64) (permits.Permit, permits.Quota, error) {
	return l.acquire(ctx, key, cost, true)
}

// TryAcquire returns a permit for cost units of key if they are available
// now and nobody waits on the key; it never waits. A refusal is
// permits.RetryLater's: it matches permits.ErrRateLimited, errors.As finds
// a *permits.RateLimitError in it, and its RetryAfter is exact when nobody
// waits on the key and, while others wait, at least the time until the
// last of them is granted, given without asking the owner. Its other
// errors are Acquire's.
func (l *Limiter[K]) TryAcquire(key K, cost int64) (permits.Permit, error) {
	p, _, err := l.try(key, cost, false)
	return p, err
}

// TryAcquireQuota is TryAcquire, returning with the permit or the refusal
// the key's Quota as of the decision: what a server puts in the RateLimit
// and Retry-After fields of its response. On the lock-free path it costs a
// few nanoseconds more than TryAcquire.
func (l *Limiter[K]) TryAcquireQuota(key K, cost int64) (permits.Permit, permits.Quota, error) {
	return l.try(key, cost, true)
}

func (l *Limiter[K]) try(key K, cost int64, full bool) (permits.Permit, permits.Quota, error) {
	if err := l.check(cost); err != nil {
		return permits.Permit{}, permits.Quota{}, err
	}
	s, h, err := l.shard(key)
	if err != nil {
		return permits.Permit{}, permits.Quota{}, err
	}
	a, err := s.attempt(key, h, cost, full, false)
	if err != nil {
		return permits.Permit{}, s.limit(a), err
	}
	switch a.verdict {
	case vDecided:
		return s.decided(a, cost, full, false)
	case vBehind:
		s.rejected.Add(1)
		return permits.Permit{}, quota.Behind(s.template(a.e), a.wait), permits.RetryLater(a.wait)
	}
	c := s.roundTrip(context.Background(), s.newCall(context.Background(), opTry, a.e, cost, l.stamp()))
	return s.answer(context.Background(), c, a.e, cost)
}

func (l *Limiter[K]) acquire(ctx context.Context, key K, cost int64, full bool) (permits.Permit, permits.Quota, error) {
	if err := ctx.Err(); err != nil {
		return permits.Permit{}, permits.Quota{}, err
	}
	if err := l.check(cost); err != nil {
		return permits.Permit{}, permits.Quota{}, err
	}
	s, h, err := l.shard(key)
	if err != nil {
		return permits.Permit{}, permits.Quota{}, err
	}
	a, err := s.attempt(key, h, cost, full, true)
	if err != nil {
		return permits.Permit{}, s.limit(a), err
	}
	if a.verdict == vDecided {
		return s.decided(a, cost, full, true)
	}
	at := l.stamp()
	if !a.now.IsZero() {
		at = int64(a.now.Sub(l.epoch)) // the fast path's reading: its arrival
	}
	c := s.newCall(ctx, opAcquire, a.e, cost, at)
	c.closer = a.closed
	c = s.roundTrip(ctx, c)
	if o := l.cfg.obs; o != nil && c.Status == stGranted {
		o.Waited(time.Duration(max(c.n-at, 0))) // from its arrival to its grant's instant
	}
	return s.answer(ctx, c, a.e, cost)
}

// decided returns what the fast path decided, counting it: acquire says
// that an Acquire's was (see grantedAtOnce).
func (s *shard[K]) decided(a attempt[K], cost int64, full, acquire bool) (permits.Permit, permits.Quota, error) {
	var q permits.Quota
	if full {
		q = quota.Of(s.template(a.e), a.d, a.now)
	}
	if a.d.Allowed {
		if acquire {
			s.grantedAtOnce()
		} else {
			s.granted.Add(1)
		}
		return permits.NewPermit(cost, nil, nil), q, nil
	}
	s.rejected.Add(1)
	return permits.Permit{}, q, permits.RetryLater(a.d.RetryAt.Sub(a.now))
}

// grantedAtOnce counts an Acquire granted on arrival, on the fast path,
// and tells the observer, if any, unless it reads the count itself
// (permits.AtOnceObserver: atOnce).
func (s *shard[K]) grantedAtOnce() {
	if s.l.stopAtOnce != nil {
		s.atOnce.Add(1)
		return
	}
	s.granted.Add(1)
	if o := s.l.cfg.obs; o != nil {
		o.Waited(0)
	}
}

// countAtOnce hands an observer that counts the Acquires granted at once
// itself the count to read (permits.AtOnceObserver).
func (l *Limiter[K]) countAtOnce() {
	if o, ok := l.cfg.obs.(permits.AtOnceObserver); ok {
		l.stopAtOnce = o.CountAtOnce(l.atOnceCount)
	}
}

// atOnceCount is the count of Acquires granted on arrival, over every
// shard, while an AtOnceObserver reads it.
func (l *Limiter[K]) atOnceCount() uint64 {
	var n uint64
	for _, s := range l.shards {
		n += s.atOnce.Load()
	}
	return n
}

// answer maps the owner's answer in c to the API and pools c.
func (s *shard[K]) answer(ctx context.Context, c *call[K], e *entry[K], cost int64) (permits.Permit, permits.Quota, error) {
	tmpl := s.template(e)
	q := permits.Quota{Limit: tmpl.Capacity(), Remaining: c.remaining, Reset: time.Duration(c.reset), Next: time.Duration(c.nextUnit), Window: quota.Window(tmpl)}
	st, n := c.Status, c.n
	s.recycle(c)
	switch st {
	case stGranted:
		return permits.NewPermit(cost, nil, nil), q, nil
	case stLimited, stDeadline:
		q.RetryAfter = time.Duration(n)
		q.Reset = max(q.Reset, q.RetryAfter)
		if st == stDeadline {
			return permits.Permit{}, q, &permits.RateLimitError{RetryAfter: q.RetryAfter, Cause: context.DeadlineExceeded}
		}
		return permits.Permit{}, q, permits.RetryLater(q.RetryAfter)
	case stTooLarge:
		return permits.Permit{}, permits.Quota{Limit: n}, permits.CostExceedsCapacity(cost, n)
	case stCanceled:
		if err := ctx.Err(); err != nil {
			return permits.Permit{}, permits.Quota{Limit: q.Limit}, err
		}
		return permits.Permit{}, permits.Quota{Limit: q.Limit}, context.Canceled
	}
	return permits.Permit{}, permits.Quota{Limit: q.Limit}, permits.ErrClosed
}

func (l *Limiter[K]) check(cost int64) error {
	switch {
	case cost < 1:
		return permits.InvalidCost(cost)
	case l.closed.Load():
		return permits.ErrClosed
	}
	return nil
}

// Close fails every waiting caller with permits.ErrClosed, makes every
// later call return it, and returns once every owner goroutine has exited.
// It is idempotent and always returns nil.
func (l *Limiter[K]) Close() error {
	l.once.Do(func() {
		l.closed.Store(true)
		for _, s := range l.shards {
			s.o.Stop()
		}
	})
	for _, s := range l.shards {
		<-s.o.Done()
	}
	if l.stopAtOnce != nil {
		l.stopOnce.Do(l.stopAtOnce)
	}
	return nil
}

// Stats is a snapshot of a Limiter's counters.
type Stats struct {
	// permits.Stats is the shape every limiter shares, over every key.
	// Refunded stays 0: a key's grants are not refunded.
	permits.Stats
	Keys int // keys live now: in use, or not yet found idle
}

// Stats returns the counters (see permits.Stats for what each counts).
func (l *Limiter[K]) Stats() Stats {
	var st Stats
	for _, s := range l.shards {
		st.Granted += s.granted.Load() + s.atOnce.Load()
		st.Rejected += s.rejected.Load()
		st.Canceled += s.canceled.Load()
	}
	st.Waiting = int(l.waiting.Load())
	st.Keys = int(l.keys.Load())
	return st
}

// shard returns key's shard and hash, or ErrInvalidKey for a key that is
// not equal to itself (a NaN, or a value that holds one): maphash gives
// such a key a new hash every time, so each request would make a new key,
// full, and never be limited.
func (l *Limiter[K]) shard(key K) (*shard[K], uint64, error) {
	if key != key {
		return nil, 0, fmt.Errorf("%w: %v is not equal to itself (a NaN, or a value holding one), so no request could find its limit again", ErrInvalidKey, key)
	}
	h := keyHash(l.seed, key, l.typed)
	return l.shards[h&l.mask], h, nil
}

// stamp is a reading of the clock, ns on the timeline.
func (l *Limiter[K]) stamp() int64 { return int64(l.cfg.clock.Now().Sub(l.epoch)) }

func (l *Limiter[K]) t(ns int64) time.Time { return l.epoch.Add(time.Duration(ns)) }

// ns converts a decision's instant to the timeline; the zero Time (never)
// becomes 0.
func (l *Limiter[K]) ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return int64(t.Sub(l.epoch))
}

// until returns the ns from from (on the timeline) until t, at least 0,
// or 0 for the zero Time: a decision's NextAt, when it has one.
func (l *Limiter[K]) until(t time.Time, from int64) int64 {
	if t.IsZero() {
		return 0
	}
	return max(l.ns(t)-from, 0)
}

func (l *Limiter[K]) String() string { return fmt.Sprintf("keyed.Limiter(%s)", l.cfg.name) }

var (
	_ permits.KeyedLimiter[string]      = (*Limiter[string])(nil)
	_ permits.KeyedQuotaLimiter[string] = (*Limiter[string])(nil)
)
