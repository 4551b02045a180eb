package actor_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/sluicehq/sluice/permits"
)

// The property test drives a Limiter with a random script of arrivals,
// cancellations, TryAcquires and a Close, all in virtual time, and compares
// every outcome with a model: a plain FIFO over a fresh copy of the same
// algorithm, granting each head at max(previous grant, arrival, RetryAt).
// Arrivals sit on even microseconds and cancellations, TryAcquires and
// Close on odd ones, and every emission interval is a whole number of even
// microseconds, so no two events the script cannot order share an instant.

type evKind int

const (
	evArrive evKind = iota
	evCancel
	evTry
	evClose
)

type scriptEvent struct {
	at       time.Duration
	kind     evKind
	id       int // arrival id, for evArrive and evCancel
	cost     int64
	deadline time.Duration // for evArrive: 0, or the context's deadline
}

type outcome struct {
	granted bool
	at      time.Duration // grant instant, since t0
	err     error         // sentinel the outcome must match when not granted
}

func (o outcome) String() string {
	if o.granted {
		return fmt.Sprintf("granted@%v", o.at)
	}
	return fmt.Sprint(o.err)
}

func randomScript(rng *rand.Rand, capacity int64) []scriptEvent {
	var evs []scriptEvent
	used := map[time.Duration]bool{}
	n := 10 + rng.IntN(40)
	for id := 0; id < n; id++ {
		var at time.Duration
		for {
			at = time.Duration(rng.IntN(50_000)) * 2 * time.Microsecond // within 100ms: queues form
			if !used[at] {
				break
			}
		}
		used[at] = true
		ev := scriptEvent{at: at, kind: evArrive, id: id, cost: 1 + rng.Int64N(capacity)}
		if rng.IntN(3) == 0 {
			ev.deadline = at + time.Duration(1+2*rng.IntN(15_000))*time.Microsecond
		}
		evs = append(evs, ev)
		if rng.IntN(3) == 0 {
			cancelAt := at + time.Duration(1+2*rng.IntN(40_000))*time.Microsecond
			evs = append(evs, scriptEvent{at: cancelAt, kind: evCancel, id: id})
		}
	}
	for i := rng.IntN(10); i > 0; i-- {
		at := time.Duration(1+2*rng.IntN(100_000)) * time.Microsecond
		evs = append(evs, scriptEvent{at: at, kind: evTry, cost: 1 + rng.Int64N(capacity)})
	}
	if rng.IntN(2) == 0 {
		at := time.Duration(1+2*rng.IntN(150_000)) * time.Microsecond
		evs = append(evs, scriptEvent{at: at, kind: evClose})
	}
	slices.SortStableFunc(evs, func(a, b scriptEvent) int { return int(a.at - b.at) })
	return evs
}

// model returns the outcome of every arrival and of every TryAcquire (in
// script order). A head is never granted before it became head: when a
// grant promotes it, at that grant's instant; when a cancellation does, at
// the cancellation.
func model(alg algorithms.Algorithm, t0 time.Time, evs []scriptEvent) (arrivals map[int]outcome, tries []bool) {
	type waiter struct {
		id         int
		cost       int64
		arrival    time.Duration
		since      time.Duration // when it became head
		retry      time.Duration
		retryKnown bool
	}
	arrivals = map[int]outcome{}
	var queue []*waiter
	var last time.Duration = -1 << 62
	closed := false
	advance := func(now time.Duration) {
		for len(queue) > 0 {
			h := queue[0]
			at := max(last, h.arrival, h.since)
			if h.retryKnown {
				at = max(at, h.retry)
			}
			if at > now {
				return
			}
			d := alg.AllowAt(t0.Add(at), h.cost)
			if !d.Allowed {
				h.retry, h.retryKnown = d.RetryAt.Sub(t0), true
				continue
			}
			last = at
			arrivals[h.id] = outcome{granted: true, at: at}
			queue = queue[1:]
			if len(queue) > 0 {
				queue[0].since = at
			}
		}
	}
	for _, ev := range evs {
		if closed {
			switch ev.kind {
			case evArrive:
				arrivals[ev.id] = outcome{err: permits.ErrClosed}
			case evTry:
				tries = append(tries, false)
			}
			continue
		}
		advance(ev.at)
		switch ev.kind {
		case evArrive:
			if len(queue) == 0 {
				if d := alg.AllowAt(t0.Add(ev.at), ev.cost); d.Allowed {
					arrivals[ev.id] = outcome{granted: true, at: ev.at}
					continue
				}
			}
			w := &waiter{id: ev.id, cost: ev.cost, arrival: ev.at, since: ev.at}
			if ev.deadline != 0 {
				// Predict by playing the queue forward on copies.
				saved, savedLast, savedArr := alg, last, arrivals
				alg, arrivals = alg.(algorithms.Cloner).Clone(), map[int]outcome{}
				var copies []*waiter
				for _, q := range append(queue, w) {
					c := *q
					copies = append(copies, &c)
				}
				saved2 := queue
				queue = copies
				advance(1 << 62)
				predicted := arrivals[ev.id].at
				alg, last, arrivals, queue = saved, savedLast, savedArr, saved2
				if predicted > ev.deadline {
					arrivals[ev.id] = outcome{at: ev.at, err: errDeadlineRefused}
					continue
				}
			}
			queue = append(queue, w)
		case evCancel:
			for i, w := range queue {
				if w.id == ev.id {
					queue = slices.Delete(queue, i, i+1)
					arrivals[ev.id] = outcome{err: context.Canceled}
					if i == 0 && len(queue) > 0 {
						queue[0].since = ev.at
					}
					break
				}
			}
		case evTry:
			ok := len(queue) == 0 && alg.AllowAt(t0.Add(ev.at), ev.cost).Allowed
			tries = append(tries, ok)
		case evClose:
			for _, w := range queue {
				arrivals[w.id] = outcome{err: permits.ErrClosed}
			}
			queue, closed = nil, true
		}
		advance(ev.at)
	}
	advance(1 << 62)
	return arrivals, tries
}

// errDeadlineRefused stands for the error of an Acquire refused at once
// because its deadline is before the predicted grant.
var errDeadlineRefused = &permits.RateLimitError{RetryAfter: 1, Cause: context.DeadlineExceeded}

// run plays the script against a real Limiter inside a synctest bubble.
func run(t *testing.T, alg algorithms.Algorithm, evs []scriptEvent) (arrivals map[int]outcome, tries []bool) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := actor.MustNew(alg)
		defer l.Close()
		a := newScriptArrivals(t0)
		for _, ev := range evs {
			if ev.kind != evArrive {
				continue
			}
			a.start(ev.id, ev.at, ev.deadline, func(ctx context.Context) outcome {
				p, err := l.Acquire(ctx, ev.cost)
				if err != nil {
					return outcome{err: err, at: time.Since(t0)}
				}
				o := outcome{granted: true, at: time.Since(t0)}
				if p.Cost() != ev.cost {
					o.err = fmt.Errorf("permit cost %d, want %d", p.Cost(), ev.cost)
				}
				return o
			})
		}
		for _, ev := range evs {
			time.Sleep(time.Until(t0.Add(ev.at)))
			switch ev.kind {
			case evCancel:
				a.cancel[ev.id]()
			case evTry:
				_, err := l.TryAcquire(ev.cost)
				tries = append(tries, err == nil)
			case evClose:
				require.NoError(t, l.Close())
			}
		}
		arrivals = a.wait()
	})
	return arrivals, tries
}

// scriptArrivals runs a script's arrivals, each in a goroutine of its own
// that sleeps until its instant and then acquires with a context that can
// be cancelled (cancel) and has the arrival's deadline, if any.
type scriptArrivals struct {
	t0     time.Time
	mu     sync.Mutex
	wg     sync.WaitGroup
	out    map[int]outcome
	cancel map[int]context.CancelFunc
	ends   []context.CancelFunc
}

func newScriptArrivals(t0 time.Time) *scriptArrivals {
	return &scriptArrivals{t0: t0, out: map[int]outcome{}, cancel: map[int]context.CancelFunc{}}
}

// start starts arrival id at at (since t0), with a deadline at deadline if
// it is not 0; acquire returns its outcome.
func (a *scriptArrivals) start(id int, at, deadline time.Duration, acquire func(context.Context) outcome) {
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel[id] = cancel
	if deadline != 0 {
		var end context.CancelFunc
		ctx, end = context.WithDeadline(ctx, a.t0.Add(deadline))
		a.ends = append(a.ends, end)
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer cancel()
		time.Sleep(at)
		o := acquire(ctx)
		a.mu.Lock()
		a.out[id] = o
		a.mu.Unlock()
	}()
}

// wait waits for every arrival and returns their outcomes.
func (a *scriptArrivals) wait() map[int]outcome {
	a.wg.Wait()
	for _, end := range a.ends {
		end()
	}
	return a.out
}

func TestPropertyAgainstModel(t *testing.T) {
	configs := []struct {
		name string
		make func() algorithms.Algorithm
		rate algorithms.Rate
		cap  int64
	}{
		{"gcra 500/s burst 3", func() algorithms.Algorithm {
			g, _ := algorithms.NewGCRA(algorithms.PerSecond(500), 3)
			return g
		}, algorithms.PerSecond(500), 3},
		{"token bucket 4 at 250/s", func() algorithms.Algorithm {
			b, _ := algorithms.NewTokenBucket(algorithms.PerSecond(250), 4)
			return b
		}, algorithms.PerSecond(250), 4},
		{"sliding window 5 per 20ms", func() algorithms.Algorithm {
			w, _ := algorithms.NewSlidingWindow(algorithms.Rate{Count: 5, Per: 20 * time.Millisecond})
			return w
		}, algorithms.Rate{}, 5},
	}
	seeds := int(testutil.Volume(60, 2000))
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			waited, deadlines, decisions := 0, 0, 0
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				rng := rand.New(rand.NewPCG(seed, 7))
				evs := randomScript(rng, cfg.cap)
				decisions += len(evs)
				got, gotTries := run(t, cfg.make(), evs)
				// The bubble starts at the same instant every time.
				want, wantTries := model(cfg.make(), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), evs)
				for id, w := range want {
					g := got[id]
					if w.err == errDeadlineRefused {
						var rl *permits.RateLimitError
						if !errors.As(g.err, &rl) || !errors.Is(g.err, context.DeadlineExceeded) || g.at != w.at {
							t.Fatalf("seed %d: arrival %d: got %v at %v, want a refusal at once (%v) for its deadline\nscript: %v", seed, id, g, g.at, w.at, evs)
						}
						deadlines++
						continue
					}
					if w.granted != g.granted || (w.granted && w.at != g.at) || (!w.granted && !errors.Is(g.err, w.err)) {
						t.Fatalf("seed %d: arrival %d: got %v, model says %v\nscript: %v", seed, id, g, w, evs)
					}
				}
				require.Equal(t, wantTries, gotTries, "seed %d: TryAcquire outcomes", seed)
				checkFIFO(t, seed, evs, got)
				for _, o := range got {
					if o.granted && o.at > 0 {
						waited++
					}
				}
				if cfg.rate.Count > 0 {
					checkBound(t, seed, evs, got, cfg.rate, cfg.cap)
				}
			}
			testutil.ReportDecisions(t, int64(decisions))
			// The scripts must exercise the queue, not only free capacity.
			require.Greater(t, waited, seeds*5, "grants after the first instant")
			require.Greater(t, deadlines, seeds/2, "refusals for a deadline")
		})
	}
}

// checkFIFO: among granted arrivals, a later arrival never has an earlier
// grant. (Equal instants are allowed: a burst grants several at once.)
func checkFIFO(t *testing.T, seed uint64, evs []scriptEvent, got map[int]outcome) {
	var prev time.Duration = -1
	for _, ev := range evs {
		if ev.kind != evArrive || !got[ev.id].granted {
			continue
		}
		if got[ev.id].at < prev {
			t.Fatalf("seed %d: arrival %d granted at %v, before an earlier arrival's grant at %v", seed, ev.id, got[ev.id].at, prev)
		}
		prev = got[ev.id].at
	}
}

// checkBound: over every closed interval between two grant instants, the
// granted cost is at most capacity + floor(rate·d).
func checkBound(t *testing.T, seed uint64, evs []scriptEvent, got map[int]outcome, r algorithms.Rate, capacity int64) {
	type g struct {
		at   time.Duration
		cost int64
	}
	var gs []g
	for _, ev := range evs {
		if ev.kind == evArrive && got[ev.id].granted {
			gs = append(gs, g{got[ev.id].at, ev.cost})
		}
	}
	slices.SortFunc(gs, func(a, b g) int { return int(a.at - b.at) })
	for i := range gs {
		var sum int64
		for j := i; j < len(gs); j++ {
			sum += gs[j].cost
			d := gs[j].at - gs[i].at
			if bound := capacity + int64(d)*r.Count/int64(r.Per); sum > bound {
				t.Fatalf("seed %d: %d units in [%v, %v], bound %d", seed, sum, gs[i].at, gs[j].at, bound)
			}
		}
	}
}
