package keyed_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/internal/testutil/ownermodel"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// The reference-model property test of issue 25 for keyed's owners: keys
// of one keyed.Limiter over two shards, driven by the one harness
// (internal/testutil/ownermodel) with Acquires, cancellations,
// TryAcquires, SetRate per key, Close and shard owners that stall, and
// held per key to the same GCRA model, bound, FIFO, Stats and RetryAfter
// rules as actor's Limiter and redislimit's. Keys have no Refund, Settle
// or Pause. A keyed grant carries no instant: the harness takes its
// delivery, exact unless a stall of its owner ended then. A full-volume
// run makes 10^6 calls.

// keySubject is a keyed.Limiter: a domain per key.
type keySubject struct{ l *keyed.Limiter[int] }

func (s keySubject) Acquire(ctx context.Context, key int, cost int64) (ownermodel.Grant, error) {
	_, err := s.l.Acquire(ctx, key, cost)
	return ownermodel.Grant{}, err
}

func (s keySubject) TryAcquire(key int, cost int64) (ownermodel.Grant, error) {
	_, err := s.l.TryAcquire(key, cost)
	return ownermodel.Grant{}, err
}

func (s keySubject) SetRate(key int, rate algorithms.Rate) error { return s.l.SetRate(key, rate) }
func (s keySubject) Stats() permits.Stats                        { return s.l.Stats().Stats }
func (s keySubject) Close() error                                { return s.l.Close() }

func TestPropertyKeysKeepTheReferenceModel(t *testing.T) {
	cfg := ownermodel.Config{
		Rate: algorithms.PerSecond(30), Burst: 3, Domains: 3, Stalls: true,
		Rates: []algorithms.Rate{algorithms.PerSecond(10), algorithms.PerSecond(30), algorithms.PerSecond(90)},
	}
	ownermodel.Run(t, cfg, testutil.Volume(20_000, 1_000_000), func(t *testing.T, clock *ownermodel.StallClock) ownermodel.Subject {
		l, err := keyed.NewGCRA[int](cfg.Rate, cfg.Burst, keyed.WithShards(2), keyed.WithClock(clock),
			// A key dropped idle comes back at the constructor's rate, not
			// the one SetRate gave it; keep keys live, as a SetRate's
			// Limiter keeps its rate.
			keyed.WithIdleTimeout(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return keySubject{l}
	})
}
