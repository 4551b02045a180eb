package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/permits"
)

// event is one caller of a random script: at offset at it calls Acquire
// (with a deadline, or cancelled after cancel) or TryAcquire.
type event struct {
	at       time.Duration
	cost     int64
	try      bool
	deadline time.Duration // 0: none
	cancel   time.Duration // 0: never
}

// result is what the caller of one event got, and when.
type result struct {
	granted  bool
	at       time.Duration
	limited  bool // *permits.RateLimitError
	deadline bool // and it matched context.DeadlineExceeded
	canceled bool
}

func (r result) String() string {
	switch {
	case r.granted:
		return fmt.Sprintf("granted at %v", r.at)
	case r.deadline:
		return "refused for its deadline"
	case r.limited:
		return "rate limited"
	case r.canceled:
		return "canceled"
	}
	return "?"
}

func randomScript(rng *rand.Rand, n int, burst int64, unitCosts bool) []event {
	var evs []event
	var at time.Duration
	for range n {
		at += time.Duration(1+rng.IntN(40_000)) * time.Microsecond
		ev := event{at: at, cost: 1}
		if !unitCosts {
			ev.cost = 1 + rng.Int64N(burst)
		}
		switch k := rng.IntN(10); {
		case k < 2:
			ev.try = true
		case k < 5:
			ev.deadline = time.Duration(rng.IntN(300_000)) * time.Microsecond
		case k < 7 && unitCosts:
			ev.cancel = time.Duration(1+rng.IntN(200_000)) * time.Microsecond
		}
		evs = append(evs, ev)
	}
	return evs
}

// play runs the events against lim, each at its instant, and returns what
// each caller got.
func play(lim permits.Limiter, evs []event) []result {
	// Start on a whole millisecond: Redis counts whole µs of the bubble's
	// clock, which an earlier play may have left between two.
	time.Sleep(time.Until(time.Now().Truncate(time.Millisecond).Add(time.Millisecond)))
	begin := time.Now()
	out := make([]result, len(evs))
	done := make(chan struct{}, len(evs))
	for i, ev := range evs {
		go func() {
			defer func() { done <- struct{}{} }()
			time.Sleep(ev.at)
			var err error
			if ev.try {
				_, err = lim.TryAcquire(ev.cost)
			} else {
				ctx, cancel := context.WithCancel(context.Background())
				if ev.deadline > 0 {
					ctx, cancel = context.WithTimeout(context.Background(), ev.deadline)
				}
				if ev.cancel > 0 {
					time.AfterFunc(ev.cancel, cancel)
				}
				_, err = lim.Acquire(ctx, ev.cost)
				cancel()
			}
			r := &out[i]
			switch {
			case err == nil:
				r.granted, r.at = true, time.Since(begin)
			case errors.Is(err, permits.ErrRateLimited):
				r.limited, r.deadline = true, errors.Is(err, context.DeadlineExceeded)
			case errors.Is(err, context.Canceled):
				r.canceled = true
			default:
				panic(err)
			}
		}()
	}
	for range evs {
		<-done
	}
	return out
}

// TestBehavesAsTheInProcessGCRA plays random scripts of Acquires with and
// without deadlines, TryAcquires and (with unit costs) cancellations at
// distinct instants against a Limiter and against actor.New(GCRA) on the
// same clock, and requires the same outcome for every caller, grants at
// the same instant to within the microsecond Redis counts in, exact Stats,
// and the GCRA bound on the Limiter's grants over every window.
func TestBehavesAsTheInProcessGCRA(t *testing.T) {
	for _, cfg := range []struct {
		rate  algorithms.Rate
		burst int64
		unit  bool
	}{
		{algorithms.PerSecond(20), 3, false},
		{algorithms.PerSecond(50), 1, true},
		{algorithms.PerSecond(3), 2, false},
		{algorithms.PerSecond(30), 4, true},
	} {
		for seed := uint64(1); seed <= uint64(testutil.Volume(3, 30)); seed++ {
			t.Run(fmt.Sprintf("%v burst %d unit %v seed %d", cfg.rate, cfg.burst, cfg.unit, seed), func(t *testing.T) {
				evs := randomScript(rand.New(rand.NewPCG(seed, 11)), 150, cfg.burst, cfg.unit)
				defer testutil.ReportDecisions(t, int64(len(evs)))
				inBubble(t, func(t *testing.T, c *redis.Client) {
					g, err := algorithms.NewGCRA(cfg.rate, cfg.burst)
					require.NoError(t, err)
					ref := actor.MustNew(g)
					defer ref.Close()
					want := play(ref, evs)
					l := vlimiter(t, c, "prop", cfg.rate, cfg.burst)
					got := play(l, evs)
					for i := range evs {
						w, gt := want[i], got[i]
						if w.granted && gt.granted {
							// Redis counts whole µs, rounded up; in process,
							// whole ns, rounded up.
							d := (gt.at - w.at).Abs()
							require.Less(t, d, time.Microsecond, "event %d %+v: granted at %v, in process at %v", i, evs[i], gt.at, w.at)
							continue
						}
						require.Equal(t, w.String(), gt.String(), "event %d %+v", i, evs[i])
					}
					checkBound(t, cfg.rate, cfg.burst, evs, got)
					st := l.Stats()
					var granted, limited, canceled uint64
					for _, r := range got {
						switch {
						case r.granted:
							granted++
						case r.limited:
							limited++
						case r.canceled:
							canceled++
						}
					}
					assert.Equal(t, granted, st.Granted)
					assert.Equal(t, limited, st.Rejected)
					assert.Equal(t, canceled, st.Canceled)
					assert.Zero(t, st.Waiting)
				})
			})
		}
	}
}

// checkBound requires that the grants never exceed burst + floor(rate·d)
// over any closed window of length d of the instants Redis admitted them
// at. Each grant is delivered at its admission instant rounded up to the
// µs, so two delivered grants d apart were admitted less than d + 1 µs
// apart: the window checked is that.
func checkBound(t *testing.T, rate algorithms.Rate, burst int64, evs []event, got []result) {
	t.Helper()
	type grant struct {
		at   time.Duration
		cost int64
	}
	var gs []grant
	for i, r := range got {
		if r.granted {
			gs = append(gs, grant{r.at, evs[i].cost})
		}
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].at < gs[j].at })
	for i := range gs {
		var sum int64
		for j := i; j < len(gs); j++ {
			sum += gs[j].cost
			d := gs[j].at - gs[i].at + time.Microsecond - 1
			bound := burst + int64(d)*rate.Count/int64(rate.Per)
			require.LessOrEqual(t, sum, bound, "grants %d..%d over %v", i, j, d)
		}
	}
}
