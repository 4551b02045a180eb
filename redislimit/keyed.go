package redislimit

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// Keyed is a rate limit per key (per user, per API key, per account), each
// key's state in Redis under prefix + "{" + key + "}", shared by every
// process using the same prefix, rate and burst. One owner serves every
// key: each batch makes one script call per key with requests, pipelined
// together; the hash tag puts each key in the slot of its own name, so a
// Cluster spreads the keys and each call touches one slot (a prefix that
// holds a hash tag of its own pins every key to that tag's slot instead:
// Redis hashes the first {...} of a key). On a Cluster (a
// *redis.ClusterClient) each master has its own batch in flight and its
// own health: a master down fails only the keys of its slots, within
// WithCallTimeout, and the others' keys are served as before
// (docs/distributed.md). Each key has its own FIFO line; keys never wait
// for each other.
//
// Each decision can report the key's permits.Quota (TryAcquireQuota,
// AcquireQuota), as every process sees it: httplimit.Middleware over a
// Keyed sends a fleet's clients the RateLimit fields of the limit they
// share.
//
// A Keyed is safe for concurrent use. Close it when done: it owns two
// goroutines. It holds nothing for a key nobody is waiting on.
type Keyed struct {
	e *engine
}

// NewKeyed returns a Keyed whose keys admit rate with bursts of up to
// burst units each. It fails like New, and for WithFailOpen: falling open
// for many keys needs a limiter per key in process, which a Keyed does not
// keep (it would grow a goroutine per key while Redis is down).
func NewKeyed(client redis.UniversalClient, prefix string, rate algorithms.Rate, burst int64, opts ...Option) (*Keyed, error) {
	var cfg config
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.open {
		return nil, invalid("NewKeyed does not support WithFailOpen")
	}
	q, err := newQuota(rate, burst)
	if err != nil {
		return nil, err
	}
	e, err := newEngine(client, q, nil, opts)
	if err != nil {
		return nil, err
	}
	e.prefix, e.logKey = prefix, prefix
	return &Keyed{e: e}, nil
}

// Acquire is Limiter.Acquire for key.
func (k *Keyed) Acquire(ctx context.Context, key string, cost int64) (permits.Permit, error) {
	return k.acquire(ctx, key, opAcquire, cost)
}

// TryAcquire is Limiter.TryAcquire for key.
func (k *Keyed) TryAcquire(key string, cost int64) (permits.Permit, error) {
	return k.acquire(context.Background(), key, opTry, cost)
}

func (k *Keyed) acquire(ctx context.Context, key string, o op, cost int64) (permits.Permit, error) {
	r, err := k.e.acquire(ctx, k.RedisKey(key), o, cost)
	if err != nil { // a Keyed never falls open (NewKeyed)
		return permits.Permit{}, err
	}
	p := permits.NewPermit(r.cost, nil, nil)
	k.e.recycle(r)
	return p, nil
}

// RedisKey returns the Redis key that holds key's state.
func (k *Keyed) RedisKey(key string) string { return k.e.prefix + "{" + key + "}" }

// Close is Limiter.Close.
func (k *Keyed) Close() error {
	k.e.close()
	return nil
}

// Stats returns the counters, over every key.
func (k *Keyed) Stats() Stats { return k.e.stats() }
