package redislimit_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/internal/testutil/ownermodel"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// The reference-model property test of issue 25 for redislimit's owner:
// a Limiter on a real redis-server, driven by the one harness
// (internal/testutil/ownermodel) with Acquires, cancellations,
// TryAcquires and Close, and held to the same GCRA model, bound and Stats
// as actor's and keyed's owners. The Limiter has no Settle, Pause or
// SetRate; a RetryAfter behind waiters is a lower bound (the wait behind
// this process's reservations). A script call is real I/O on loopback,
// so the volume is smaller.

// redisSubject is a Limiter: one domain.
type redisSubject struct{ l *redislimit.Limiter }

func (s redisSubject) Acquire(ctx context.Context, _ int, cost int64) (ownermodel.Grant, error) {
	g, err := s.l.AcquireGrant(ctx, cost)
	return ownermodel.Grant{At: g.At, P: g}, err
}

func (s redisSubject) TryAcquire(_ int, cost int64) (ownermodel.Grant, error) {
	g, err := s.l.TryAcquireGrant(cost)
	return ownermodel.Grant{At: g.At, P: g}, err
}

func (s redisSubject) Refund(g ownermodel.Grant) bool { return s.l.Refund(g.P) }
func (s redisSubject) Stats() permits.Stats           { return s.l.Stats().Stats }
func (s redisSubject) Close() error                   { return s.l.Close() }

// redisModelConfig is GCRA 30/s burst 3. Redis places a grant on whole
// µs, rounded up, and the Limiter maps it to its own timeline from the
// reply's reading: an instant is known to a µs either way.
func redisModelConfig(stalls bool) ownermodel.Config {
	return ownermodel.Config{Rate: algorithms.PerSecond(30), Burst: 3, Domains: 1,
		Resolution: 2 * time.Microsecond, RetryLowerBound: true,
		Stalls: stalls, StallsDelay: true, OwnerFrame: "redislimit.(*engine).loop("}
}

func playRedisModel(t *testing.T, cfg ownermodel.Config, target int64) {
	srv := redistest.Test(t)
	n := 0
	ownermodel.Run(t, cfg, target, func(t *testing.T, clock *ownermodel.StallClock) ownermodel.Subject {
		c := srv.NewClient()
		t.Cleanup(func() { c.Close() })
		n++ // a key per script: each starts full
		l, err := redislimit.New(c, fmt.Sprint("model-", n), cfg.Rate, cfg.Burst,
			redislimit.WithServerClock(vnow), redislimit.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		return redisSubject{l}
	})
}

// realSubject is a Limiter on Redis TIME: its grant hook tells the
// model every admission at Redis's instant. It offers no Refund: the
// hook does not say which grant an admission was, so a refunded one
// could not be left out.
type realSubject struct {
	l  *redislimit.Limiter
	mu sync.Mutex
	as []ownermodel.Admission
}

func (s *realSubject) Acquire(ctx context.Context, _ int, cost int64) (ownermodel.Grant, error) {
	g, err := s.l.AcquireGrant(ctx, cost)
	return ownermodel.Grant{At: g.At, P: g}, err
}

func (s *realSubject) TryAcquire(_ int, cost int64) (ownermodel.Grant, error) {
	g, err := s.l.TryAcquireGrant(cost)
	return ownermodel.Grant{At: g.At, P: g}, err
}

func (s *realSubject) Stats() permits.Stats { return s.l.Stats().Stats }
func (s *realSubject) Close() error         { return s.l.Close() }

func (s *realSubject) admitted(us, cost int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.as = append(s.as, ownermodel.Admission{At: time.UnixMicro(us), Cost: cost})
}

func (s *realSubject) Admissions(time.Time) []ownermodel.Admission {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.as)
}

// On the real clock, as users run it: Redis TIME decides, the script
// sleeps for real (GCRA 500/s, burst 4: a script takes about half a
// second), and only what holds at any speed is checked: every admission
// conforms to the model and keeps the bound, by Redis TIME, and Stats are
// exact once every call returned. 500 calls by default, 20,000 at full
// volume.
func TestPropertyTheRedisLimiterKeepsTheReferenceModelOnRedisTime(t *testing.T) {
	srv := redistest.Test(t)
	c := srv.Client(t)
	cfg := ownermodel.Config{Rate: algorithms.PerSecond(500), Burst: 4, Domains: 1, RealTime: true,
		Resolution: time.Microsecond}
	n := 0
	ownermodel.Run(t, cfg, testutil.Volume(500, 20_000), func(t *testing.T, clock *ownermodel.StallClock) ownermodel.Subject {
		n++
		s := &realSubject{}
		l, err := redislimit.New(c, fmt.Sprint("model-real-", n), cfg.Rate, cfg.Burst,
			redislimit.WithClock(clock), redislimit.WithGrantHook(s.admitted))
		if err != nil {
			t.Fatal(err)
		}
		s.l = l
		return s
	})
}

// In a testing/synctest bubble, with the script deciding at the bubble's
// clock (WithServerClock), every rule can be checked to the microsecond,
// FIFO and RetryAfter included. Not yet: with the seam, an Acquire and a
// TryAcquire made at once on a fresh key of burst 3 are both granted 3
// units in about half the runs (243 of 500 pairs at GCRA 30/s; never
// when the Acquire has returned first, never on Redis TIME, 0 of 500):
// one of the two calls is not given the bubble's instant and decides at
// Redis TIME, decades after the other's state. With owner stalls, more
// such grants.
func TestPropertyTheRedisLimiterKeepsTheReferenceModelInVirtualTime(t *testing.T) {
	t.Skip("issue 25: WithServerClock does not reach every concurrent call: an Acquire and a TryAcquire at once both get the whole burst")
	playRedisModel(t, redisModelConfig(true), testutil.Volume(1_500, 50_000))
}
