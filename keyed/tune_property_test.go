package keyed_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// The property test again, with SetRate and SetBurst in the scripts: a
// keyed.Limiter must still behave as one actor.Limiter per key, to the
// nanosecond, when keys change their rate or burst while waiters wait and
// lock-free callers decide. Keys of the shared configuration are cells, so
// the first change of each detaches its cell into a GCRA of its own: any
// capacity that conversion lost or gained would show as a grant at another
// instant than the actor's. Keys are kept live (WithIdleTimeout), as an
// actor.Limiter keeps its setting forever.

// tunable is a subject whose keys' limits can change.
type tunable interface {
	SetRate(key int, rate algorithms.Rate) error
	SetBurst(key int, burst int64) error
}

func (p *perKey) SetRate(key int, rate algorithms.Rate) error {
	return p.get(key).SetRate(rate)
}

func (p *perKey) SetBurst(key int, burst int64) error {
	return p.get(key).SetBurst(burst)
}

// tune applies a script's rateIt or burstIt event to l.
func tune(l tunable, ev event) result {
	var err error
	if ev.kind == rateIt {
		err = l.SetRate(ev.key, ev.rate)
	} else {
		err = l.SetBurst(ev.key, ev.cost)
	}
	if err != nil {
		return result{err: err.Error()}
	}
	return result{granted: true}
}

// withTunes adds a few changes to a script, at odd microseconds as its
// other events that are not arrivals: rates from a fifth to four times
// base, bursts from 1 to capacity+2. It takes Close out: once closed, a
// cost above a key's lowered burst fails with ErrClosed in keyed, which
// does not look the key up, and with ErrCostExceedsCapacity in actor
// (TestSetRateErrors has the changes after Close).
func withTunes(rng *rand.Rand, evs []event, keys int, base algorithms.Rate, capacity int64) []event {
	evs = slices.DeleteFunc(evs, func(ev event) bool { return ev.kind == closeIt })
	for i := 2 + rng.IntN(6); i > 0; i-- {
		ev := event{at: time.Duration(1+2*rng.IntN(100_000)) * time.Microsecond, kind: rateIt, key: rng.IntN(keys)}
		if rng.IntN(3) == 0 {
			ev.kind, ev.cost = burstIt, 1+rng.Int64N(capacity+2)
		} else {
			ev.rate = algorithms.Rate{Count: base.Count * (1 + rng.Int64N(20)), Per: 5 * base.Per}
		}
		evs = append(evs, ev)
	}
	slices.SortStableFunc(evs, func(a, b event) int { return int(a.at - b.at) })
	return evs
}

func TestPropertyTunedKeysBehaveAsOneActorLimiterPerKey(t *testing.T) {
	gcra := func(rate algorithms.Rate, burst int64) algorithms.Algorithm {
		g, _ := algorithms.NewGCRA(rate, burst)
		return g
	}
	configs := []struct {
		name string
		make func(key int) algorithms.Algorithm
		base algorithms.Rate
		cap  int64
	}{
		{"gcra 500/s burst 3, cells", func(int) algorithms.Algorithm { return gcra(algorithms.PerSecond(500), 3) }, algorithms.PerSecond(500), 3},
		{"token bucket 4 at 250/s, cells", func(int) algorithms.Algorithm {
			b, _ := algorithms.NewTokenBucket(algorithms.PerSecond(250), 4)
			return b
		}, algorithms.PerSecond(250), 4},
		{"key 0 with its own gcra, the others cells", func(k int) algorithms.Algorithm {
			if k == 0 {
				return gcra(algorithms.PerSecond(400), 3)
			}
			return gcra(algorithms.PerSecond(500), 3)
		}, algorithms.PerSecond(500), 3},
		{"sliding window 5 per 20ms", func(int) algorithms.Algorithm {
			w, _ := algorithms.NewSlidingWindow(algorithms.Rate{Count: 5, Per: 20 * time.Millisecond})
			return w
		}, algorithms.Rate{Count: 5, Per: 20 * time.Millisecond}, 5},
	}
	seeds := int(testutil.Volume(40, 1000))
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			var waited, changed, failed int
			var decisions int64
			defer func() { testutil.ReportDecisions(t, decisions) }()
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				rng := rand.New(rand.NewPCG(seed, 13))
				evs := withTunes(rng, script(rng, 3, cfg.cap), 3, cfg.base, cfg.cap)
				decisions += int64(len(evs))
				got, gotOthers := play(t, func() subject {
					l, err := keyed.New(func(k int) (algorithms.Algorithm, error) { return cfg.make(k), nil },
						keyed.WithShards(2), keyed.WithIdleTimeout(time.Hour))
					require.NoError(t, err)
					return l
				}, evs)
				want, wantOthers := play(t, func() subject {
					return &perKey{forKey: cfg.make, lims: map[int]*actor.Limiter{}}
				}, evs)
				// A full capacity's return at the slowest the script makes
				// a key: bursts up to cap+2, rates down to a fifth of the
				// base (and key 0's own GCRA a little slower still).
				slack := time.Duration(int64(cfg.base.Per) * 6 * (cfg.cap + 2) / cfg.base.Count)
				w, _ := compareRuns(t, seed, evs, got, want, gotOthers, wantOthers, slack)
				waited += w
				for _, ev := range evs {
					if ev.kind == rateIt || ev.kind == burstIt {
						changed++
					}
				}
				for _, w := range want {
					if strings.Contains(w.err, permits.ErrCostExceedsCapacity.Error()) {
						failed++
					}
				}
			}
			require.Greater(t, waited, seeds*5, "grants after waiting")
			require.Greater(t, changed, seeds*2, "changes")
			t.Logf("%d waited, %d changes, %d too large after a change, over %d scripts", waited, changed, failed, seeds)
		})
	}
}
