package keyed_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// The property test plays one random script over a few keys twice, in
// virtual time: against a keyed.Limiter, and against one actor.Limiter per
// key, each owning a fresh copy of the same algorithm. Every outcome must
// be the same: each Acquire granted at the same instant or refused with the
// same error and RetryAfter, each TryAcquire granted or refused alike. A
// TryAcquire refused behind waiters gets the wait behind the queue's tail:
// from what the owner published, without a message, or from the owner
// when what it published would not be honest (it predicted nothing, or,
// in an actor.Limiter, whose owner is not woken by an arrival that only
// joins its queue, arrivals wait in its inbox). The owner's answer
// includes the newcomer's own cost, the published tail does not, so the
// two limiters' answers may differ by up to the time a full capacity
// takes to come back (slack), never by more. Arrivals sit on even
// microseconds, cancellations, TryAcquires and Close on odd ones, so no two
// events the script cannot order share an instant.

type kind int

const (
	arrive kind = iota
	cancelIt
	tryIt
	closeIt
	rateIt  // SetRate(key, rate), on a subject that can (tune_property_test.go)
	burstIt // SetBurst(key, burst)
)

type event struct {
	at       time.Duration
	kind     kind
	id       int
	key      int
	cost     int64
	deadline time.Duration
	rate     algorithms.Rate // rateIt; burstIt's burst is cost
}

func script(rng *rand.Rand, keys int, capacity int64) []event {
	var evs []event
	used := map[time.Duration]bool{}
	n := 20 + rng.IntN(60)
	for id := range n {
		var at time.Duration
		for {
			at = time.Duration(rng.IntN(50_000)) * 2 * time.Microsecond
			if !used[at] {
				break
			}
		}
		used[at] = true
		ev := event{at: at, kind: arrive, id: id, key: rng.IntN(keys), cost: 1 + rng.Int64N(capacity)}
		if rng.IntN(3) == 0 {
			ev.deadline = at + time.Duration(1+2*rng.IntN(15_000))*time.Microsecond
		}
		evs = append(evs, ev)
		if rng.IntN(3) == 0 {
			evs = append(evs, event{at: at + time.Duration(1+2*rng.IntN(40_000))*time.Microsecond, kind: cancelIt, id: id})
		}
	}
	for i := rng.IntN(20); i > 0; i-- {
		evs = append(evs, event{at: time.Duration(1+2*rng.IntN(100_000)) * time.Microsecond, kind: tryIt, key: rng.IntN(keys), cost: 1 + rng.Int64N(capacity)})
	}
	if rng.IntN(2) == 0 {
		evs = append(evs, event{at: time.Duration(1+2*rng.IntN(150_000)) * time.Microsecond, kind: closeIt})
	}
	slices.SortStableFunc(evs, func(a, b event) int { return int(a.at - b.at) })
	return evs
}

// result is an outcome that two runs can compare.
type result struct {
	granted bool
	at      time.Duration
	err     string // the error's text: RetryAfter and cause included
}

// subject is what a script drives: a keyed limiter, or actor limiters.
type subject interface {
	Acquire(ctx context.Context, key int, cost int64) (permits.Permit, error)
	TryAcquire(key int, cost int64) (permits.Permit, error)
	Close() error
}

// perKey is one actor.Limiter per key, made on first use.
type perKey struct {
	mu   sync.Mutex
	make func() algorithms.Algorithm
	// forKey, if set, makes each key's algorithm instead of make.
	forKey func(key int) algorithms.Algorithm
	lims   map[int]*actor.Limiter
	done   bool
}

func (p *perKey) get(key int) *actor.Limiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lims[key]
	if l == nil {
		if p.forKey != nil {
			l = actor.MustNew(p.forKey(key))
		} else {
			l = actor.MustNew(p.make())
		}
		if p.done {
			l.Close()
		}
		p.lims[key] = l
	}
	return l
}

func (p *perKey) Acquire(ctx context.Context, key int, cost int64) (permits.Permit, error) {
	return p.get(key).Acquire(ctx, cost)
}
func (p *perKey) TryAcquire(key int, cost int64) (permits.Permit, error) {
	return p.get(key).TryAcquire(cost)
}
func (p *perKey) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	for _, l := range p.lims {
		l.Close()
	}
	return nil
}

func play(t *testing.T, newSubject func() subject, evs []event) (arrivals map[int]result, tries []result) {
	arrivals = map[int]result{}
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l := newSubject()
		defer l.Close()
		var mu sync.Mutex
		var wg sync.WaitGroup
		cancels := map[int]context.CancelFunc{}
		for _, ev := range evs {
			if ev.kind != arrive {
				continue
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancels[ev.id] = cancel
			if ev.deadline != 0 {
				var cancelDeadline context.CancelFunc
				ctx, cancelDeadline = context.WithDeadline(ctx, start.Add(ev.deadline))
				defer cancelDeadline()
			}
			wg.Go(func() {
				defer cancel()
				time.Sleep(ev.at)
				_, err := l.Acquire(ctx, ev.key, ev.cost)
				r := result{granted: err == nil, at: time.Since(start)}
				if err != nil {
					r.err = err.Error()
				}
				mu.Lock()
				arrivals[ev.id] = r
				mu.Unlock()
			})
		}
		for _, ev := range evs {
			time.Sleep(time.Until(start.Add(ev.at)))
			switch ev.kind {
			case cancelIt:
				cancels[ev.id]()
			case tryIt:
				_, err := l.TryAcquire(ev.key, ev.cost)
				r := result{granted: err == nil}
				if wait, ok := permits.RetryAfter(err); ok {
					r.at = wait
				} else if err != nil {
					r.err = err.Error()
				}
				tries = append(tries, r)
			case closeIt:
				require.NoError(t, l.Close())
			case rateIt, burstIt:
				tries = append(tries, tune(l.(tunable), ev))
			}
			synctest.Wait()
		}
		wg.Wait()
	})
	return arrivals, tries
}

func TestPropertyKeyedBehavesAsOneActorLimiterPerKey(t *testing.T) {
	configs := []struct {
		name  string
		make  func() algorithms.Algorithm
		cap   int64
		slack time.Duration // a full capacity's return
	}{
		{"gcra 500/s burst 3", func() algorithms.Algorithm {
			g, _ := algorithms.NewGCRA(algorithms.PerSecond(500), 3)
			return g
		}, 3, 6 * time.Millisecond},
		{"token bucket 4 at 250/s", func() algorithms.Algorithm {
			b, _ := algorithms.NewTokenBucket(algorithms.PerSecond(250), 4)
			return b
		}, 4, 16 * time.Millisecond},
		{"sliding window 5 per 20ms", func() algorithms.Algorithm {
			w, _ := algorithms.NewSlidingWindow(algorithms.Rate{Count: 5, Per: 20 * time.Millisecond})
			return w
		}, 5, 20 * time.Millisecond},
	}
	seeds := int(testutil.Volume(40, 1000))
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			var waited, refused int
			var decisions int64
			defer func() { testutil.ReportDecisions(t, decisions) }()
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				evs := script(rand.New(rand.NewPCG(seed, 12)), 3, cfg.cap)
				decisions += int64(len(evs))
				got, gotTries := play(t, func() subject {
					l, err := keyed.New(func(int) (algorithms.Algorithm, error) { return cfg.make(), nil }, keyed.WithShards(2))
					require.NoError(t, err)
					return l
				}, evs)
				want, wantTries := play(t, func() subject {
					return &perKey{make: cfg.make, lims: map[int]*actor.Limiter{}}
				}, evs)
				w, r := compareRuns(t, seed, evs, got, want, gotTries, wantTries, cfg.slack)
				waited, refused = waited+w, refused+r
			}
			require.Greater(t, waited, seeds*5, "grants after waiting")
			require.Greater(t, refused, seeds, "refusals and cancellations")
			t.Logf("%d waited, %d refused over %d scripts", waited, refused, seeds)
		})
	}
}

// compareRuns fails t unless the keyed run of evs (got) had the outcomes
// of the actor run (want), and returns how many arrivals were granted
// after waiting, and how many were refused. The other outcomes, in order
// (TryAcquires, and changes where the script has them), must be alike, a
// TryAcquire's RetryAfter within slack of actor's (see the top of the file).
func compareRuns(t *testing.T, seed uint64, evs []event, got, want map[int]result, gotOthers, wantOthers []result, slack time.Duration) (waited, refused int) {
	t.Helper()
	for id, w := range want {
		if got[id] != w {
			t.Fatalf("seed %d: arrival %d: keyed %+v, actor %+v\nscript: %+v", seed, id, got[id], w, evs)
		}
		if w.granted && w.at > 0 {
			waited++
		}
		if !w.granted {
			refused++
		}
	}
	require.Len(t, gotOthers, len(wantOthers))
	for i, w := range wantOthers {
		if g := gotOthers[i]; g.granted != w.granted || g.err != w.err || (g.at-w.at).Abs() > slack {
			t.Fatalf("seed %d: TryAcquire or change %d: keyed %+v, actor %+v\nscript: %+v", seed, i, g, w, evs)
		}
	}
	return waited, refused
}
