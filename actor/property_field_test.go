package actor_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/permits"
)

// The property test of issue 9: random Acquires (some with deadlines),
// TryAcquires, Allows, cancellations, refunds (some twice) and a Close,
// against an owner whose algorithm now and then stalls (a remote call, a GC
// pause), all in virtual time. After every step it checks that Stats are
// exact; at the end, that
//
//   - the grants that were used (granted and not refunded) keep the
//     algorithm's bound over every interval,
//   - grants follow arrival order (FIFO), and no TryAcquire or Allow passed
//     a waiter that arrived before it,
//   - no grant was delivered later than max(its instant, the moment the
//     owner was free again after the stalls in its way).
//
// A full-volume run (SLUICE_VOLUME=full) makes at least 10^6 decisions per
// algorithm across seeds, counted by the algorithm itself; the default run
// 40,000: about two hundred seeds of the script per algorithm, fifty in
// lanes.
//
// With lanes (issue 14) the same scripts send each call to one of three
// lanes of random weights and priorities, or to the limiter itself; FIFO
// then holds inside each lane, and no TryAcquire or Allow passes a waiter
// of any lane. A quarter of the decisions again.

// stalls makes an owner's decisions slow now and then, and counts every
// decision. Only the owner calls maybe, so its generator needs no lock.
type stalls struct {
	rng       *rand.Rand
	decisions atomic.Int64
	now       atomic.Bool    // the owner is stalled
	intervals [][2]time.Time // owner only until it has exited
}

func (s *stalls) maybe() {
	s.decisions.Add(1)
	if s.rng.IntN(50) != 0 {
		return
	}
	start := time.Now()
	s.now.Store(true)
	time.Sleep(time.Duration(1+s.rng.IntN(40)) * time.Millisecond)
	s.now.Store(false)
	s.intervals = append(s.intervals, [2]time.Time{start, time.Now()})
}

// gatedAlg is what the bucket family and the fixed window offer; windowAlg
// what the sliding window does.
type gatedAlg interface {
	algorithms.Gated
	algorithms.Cloner
	algorithms.Refunder
}

type windowAlg interface {
	algorithms.Algorithm
	algorithms.Cloner
	algorithms.Refunder
}

// stallGated and stallWindow keep every face of the algorithm they wrap,
// stall in the owner's calls and count every decision. Clones (the owner's
// predictions) are the bare algorithm's, not counted.
type stallGated struct {
	gatedAlg
	s *stalls
}

func (a *stallGated) AllowAt(now time.Time, cost int64) algorithms.Decision {
	a.s.maybe()
	return a.gatedAlg.AllowAt(now, cost)
}

func (a *stallGated) AllowOrCloseAt(now time.Time, cost int64) algorithms.Decision {
	a.s.maybe()
	return a.gatedAlg.AllowOrCloseAt(now, cost)
}

func (a *stallGated) TryAllowAt(now time.Time, cost int64) (algorithms.Decision, bool) {
	a.s.decisions.Add(1)
	return a.gatedAlg.TryAllowAt(now, cost)
}

func (a *stallGated) TryAdmitAt(now time.Time, cost int64) (bool, time.Duration, bool) {
	a.s.decisions.Add(1)
	return a.gatedAlg.TryAdmitAt(now, cost)
}

func (a *stallGated) RefundAt(now time.Time, r algorithms.Receipt) bool {
	a.s.maybe()
	return a.gatedAlg.RefundAt(now, r)
}

type stallWindow struct {
	windowAlg
	s *stalls
}

func (a *stallWindow) AllowAt(now time.Time, cost int64) algorithms.Decision {
	a.s.maybe()
	return a.windowAlg.AllowAt(now, cost)
}

func (a *stallWindow) RefundAt(now time.Time, r algorithms.Receipt) bool {
	a.s.maybe()
	return a.windowAlg.RefundAt(now, r)
}

// fieldConfig is one algorithm under test and the bound it keeps.
type fieldConfig struct {
	name     string
	make     func() algorithms.Algorithm
	capacity int64
	interval time.Duration                // a typical gap between admissions
	bound    func(used []usedGrant) error // nil: the bucket family's, from rate and capacity
	rate     algorithms.Rate
}

type usedGrant struct {
	at   time.Duration
	cost int64
}

func fieldConfigs() []fieldConfig {
	must := func(a algorithms.Algorithm, err error) algorithms.Algorithm {
		if err != nil {
			panic(err)
		}
		return a
	}
	window := func(limit int64, w time.Duration, fixed bool) func([]usedGrant) error {
		return func(used []usedGrant) error {
			if fixed {
				return fixedWindowBound(limit, w, used)
			}
			return slidingWindowBound(limit, w, used)
		}
	}
	return []fieldConfig{
		{name: "GCRA 30/s burst 3", make: func() algorithms.Algorithm { return must(algorithms.NewGCRA(algorithms.PerSecond(30), 3)) },
			capacity: 3, interval: 33 * time.Millisecond, rate: algorithms.PerSecond(30)},
		{name: "TokenBucket 7/s capacity 4", make: func() algorithms.Algorithm { return must(algorithms.NewTokenBucket(algorithms.PerSecond(7), 4)) },
			capacity: 4, interval: 142 * time.Millisecond, rate: algorithms.PerSecond(7)},
		{name: "LeakyBucket 500/s capacity 5", make: func() algorithms.Algorithm { return must(algorithms.NewLeakyBucket(algorithms.PerSecond(500), 5)) },
			capacity: 5, interval: 2 * time.Millisecond, rate: algorithms.PerSecond(500)},
		{name: "SlidingWindow 5 per 100ms", make: func() algorithms.Algorithm {
			return must(algorithms.NewSlidingWindow(algorithms.Rate{Count: 5, Per: 100 * time.Millisecond}))
		}, capacity: 5, interval: 20 * time.Millisecond, bound: window(5, 100*time.Millisecond, false)},
		{name: "FixedWindow 4 per 50ms", make: func() algorithms.Algorithm {
			return must(algorithms.NewFixedWindow(algorithms.Rate{Count: 4, Per: 50 * time.Millisecond}))
		}, capacity: 4, interval: 12 * time.Millisecond, bound: window(4, 50*time.Millisecond, true)},
	}
}

func TestPropertyInTheField(t *testing.T) {
	target := testutil.Volume(40_000, 1_000_000)
	for _, lanes := range []bool{false, true} {
		for _, cfg := range fieldConfigs() {
			name, target := cfg.name, target
			if lanes {
				name, target = cfg.name+" in lanes", target/4
			}
			t.Run(name, func(t *testing.T) { propertyInTheField(t, cfg, lanes, target) })
		}
	}
}

func propertyInTheField(t *testing.T, cfg fieldConfig, lanes bool, target int64) {
	t.Parallel()
	var decisions, refunds, stalled, seeds int64
	for seed := uint64(1); decisions < target; seed++ {
		d, r, s := runField(t, cfg, seed, lanes)
		decisions, refunds, stalled, seeds = decisions+d, refunds+r, stalled+s, seeds+1
	}
	testutil.ReportDecisions(t, decisions)
	t.Logf("%d refunds that gave something back, %d stalls, over %d seeds", refunds, stalled, seeds)
	if refunds < seeds || stalled < seeds {
		t.Fatalf("the scripts did not exercise refunds (%d) or stalls (%d) enough", refunds, stalled)
	}
}

// fieldRecord is what the test knows of one call.
type fieldRecord struct {
	seq       int // order of the call among all calls
	lane      int // with lanes: the lane asked, or -1 for the limiter itself
	acquire   bool
	arrived   time.Duration
	delivered time.Duration
	granted   bool
	grant     permits.Grant
	hasGrant  bool
	at        time.Duration // the grant's instant
	cost      int64
	refunded  bool
	unknownAt bool // a grant whose instant the test cannot know
	done      bool
	err       error
}

// runField plays one random script and checks it. It returns the
// decisions made, the refunds that gave something back, and the stalls.
func runField(t *testing.T, cfg fieldConfig, seed uint64, withLanes bool) (decisions, refunds, stalled int64) {
	rng := rand.New(rand.NewPCG(seed, 9))
	st := &stalls{rng: rand.New(rand.NewPCG(seed, 10))}
	failf := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s, seed %d: %s", cfg.name, seed, fmt.Sprintf(format, args...))
	}
	var records []*fieldRecord
	var mu sync.Mutex
	var t0 time.Time
	synctest.Test(t, func(t *testing.T) {
		t0 = time.Now()
		var alg algorithms.Algorithm
		switch a := cfg.make().(type) {
		case gatedAlg:
			alg = &stallGated{a, st}
		case windowAlg:
			alg = &stallWindow{a, st}
		}
		l := actor.MustNew(alg)
		// The callers: the limiter itself, and with lanes three more.
		type caller interface {
			AcquireGrant(context.Context, int64) (permits.Grant, error)
			TryAcquireGrant(int64) (permits.Grant, error)
			Allow() bool
		}
		callers := []caller{l}
		if withLanes {
			if err := l.SetPriorityFloor([]float64{0, 0.2}[rng.IntN(2)]); err != nil {
				failf("SetPriorityFloor: %v", err)
			}
			for i := range 3 {
				ln, err := l.Lane(fmt.Sprint("lane-", i), 1+rng.IntN(4), actor.WithPriority(rng.IntN(2)))
				if err != nil {
					failf("Lane: %v", err)
				}
				callers = append(callers, ln)
			}
		}
		var wg sync.WaitGroup
		var started, returned atomic.Int64
		var want struct{ granted, rejected, canceled int64 }
		cancels := map[*fieldRecord]context.CancelFunc{}
		seq := 0
		closed := false
		count := func(rec *fieldRecord) {
			switch {
			case rec.granted:
				want.granted++
			case errors.Is(rec.err, permits.ErrRateLimited):
				want.rejected++
			case errors.Is(rec.err, context.Canceled), errors.Is(rec.err, context.DeadlineExceeded):
				want.canceled++
			}
		}
		check := func(step int) {
			mu.Lock()
			defer mu.Unlock()
			s := l.Stats()
			if w := started.Load() - returned.Load(); int64(s.Waiting) != w {
				failf("step %d: Stats().Waiting = %d, but %d Acquires are blocked", step, s.Waiting, w)
			}
			// A caller whose grant raced its cancellation has its answer
			// but waits for the owner's acknowledgement, which a stalled
			// owner has not sent yet: it is counted as granted before it
			// returns. Nobody is in between otherwise.
			if closed || st.now.Load() {
				return
			}
			if int64(s.Granted) != want.granted || int64(s.Rejected) != want.rejected || int64(s.Canceled) != want.canceled {
				failf("step %d: Stats() = %+v, want granted %d, rejected %d, canceled %d", step, s, want.granted, want.rejected, want.canceled)
			}
		}
		steps := 150 + rng.IntN(150)
		for step := range steps {
			switch x := rng.IntN(10); {
			case x < 2: // the same instant
			case x < 7:
				time.Sleep(time.Duration(rng.Int64N(int64(cfg.interval)) + 1))
			case x < 9:
				time.Sleep(time.Duration(rng.Int64N(3*int64(cfg.interval)) + 1))
			default:
				time.Sleep(time.Duration(rng.Int64N(10*int64(cfg.interval)) + 1))
			}
			synctest.Wait()
			check(step)
			now := time.Since(t0)
			cost := 1 + rng.Int64N(cfg.capacity)
			if rng.IntN(8) == 0 {
				cost = 1
			}
			seq++
			who := rng.IntN(len(callers))
			c := callers[who]
			switch x := rng.IntN(100); {
			case x < 35: // an Acquire
				rec := &fieldRecord{seq: seq, lane: who - 1, acquire: true, arrived: now, cost: cost}
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(4) == 0 {
					var c2 context.CancelFunc
					ctx, c2 = context.WithTimeout(ctx, time.Duration(rng.Int64N(6*int64(cfg.interval)))+1)
					prev := cancel
					cancel = func() { c2(); prev() }
				}
				mu.Lock()
				records = append(records, rec)
				cancels[rec] = cancel
				mu.Unlock()
				started.Add(1)
				wg.Add(1)
				go func() {
					defer wg.Done()
					g, err := c.AcquireGrant(ctx, cost)
					returned.Add(1)
					mu.Lock()
					defer mu.Unlock()
					rec.delivered, rec.err, rec.done = time.Since(t0), err, true
					if err == nil {
						rec.granted, rec.grant, rec.hasGrant, rec.at = true, g, true, g.At.Sub(t0)
					}
					count(rec)
				}()
				synctest.Wait()
			case x < 45: // cancel a blocked Acquire
				mu.Lock()
				var blocked []*fieldRecord
				for _, rec := range records {
					if rec.acquire && !rec.done {
						blocked = append(blocked, rec)
					}
				}
				mu.Unlock()
				if len(blocked) > 0 {
					cancels[blocked[rng.IntN(len(blocked))]]()
					synctest.Wait()
				}
			case x < 65: // TryAcquireGrant
				g, err := c.TryAcquireGrant(cost)
				rec := &fieldRecord{seq: seq, lane: who - 1, arrived: now, delivered: time.Since(t0), cost: cost, err: err}
				if err == nil {
					rec.granted, rec.grant, rec.hasGrant, rec.at = true, g, true, g.At.Sub(t0)
				}
				mu.Lock()
				records = append(records, rec)
				count(rec)
				mu.Unlock()
			case x < 75: // Allow
				ok := c.Allow()
				// Allow says nothing of the instant it was admitted at: it
				// is the call's own when the answer came at once, and
				// unknown when a stalled owner made it wait (the algorithm
				// may have counted it at a later instant it had seen).
				rec := &fieldRecord{seq: seq, lane: who - 1, arrived: now, delivered: time.Since(t0), cost: 1, granted: ok, at: now}
				rec.unknownAt = rec.delivered != rec.arrived
				if !ok {
					rec.err = permits.ErrRateLimited
				}
				mu.Lock()
				records = append(records, rec)
				if !closed {
					count(rec)
				}
				mu.Unlock()
			case x < 99: // refund a grant, sometimes one refunded before
				mu.Lock()
				var held []*fieldRecord
				for _, rec := range records {
					if rec.hasGrant {
						held = append(held, rec)
					}
				}
				mu.Unlock()
				if len(held) > 0 {
					rec := held[len(held)-1-rng.IntN(min(len(held), 6))]
					if l.Refund(rec.grant) {
						if rec.refunded {
							failf("a second refund of call %d gave something back", rec.seq)
						}
						refunds++
					}
					mu.Lock()
					rec.refunded = true
					mu.Unlock()
				}
			default:
				if step > steps/2 {
					closed = true
					if err := l.Close(); err != nil {
						failf("Close: %v", err)
					}
					synctest.Wait()
				}
			}
		}
		closed = true
		_ = l.Close()
		wg.Wait()
		check(steps)
		for _, c := range cancels {
			c()
		}
	})
	checkFieldOutcome(t, cfg, seed, t0, records, st.intervals)
	return st.decisions.Load(), refunds, int64(len(st.intervals))
}

func checkFieldOutcome(t *testing.T, cfg fieldConfig, seed uint64, t0 time.Time, records []*fieldRecord, stalls [][2]time.Time) {
	t.Helper()
	failf := func(format string, args ...any) {
		t.Helper()
		var dump []string
		if os.Getenv("SLUICE_DUMP") != "" {
			for _, r := range records {
				kind := "try"
				if r.acquire {
					kind = "acquire"
				}
				dump = append(dump, fmt.Sprintf("#%d %s cost %d arrived %v delivered %v granted %v at %v refunded %v err %v",
					r.seq, kind, r.cost, r.arrived, r.delivered, r.granted, r.at, r.refunded, r.err))
			}
			for _, s := range stalls {
				dump = append(dump, fmt.Sprintf("stall %v..%v", s[0].Sub(t0), s[1].Sub(t0)))
			}
		}
		t.Fatalf("%s, seed %d: %s\n%s", cfg.name, seed, fmt.Sprintf(format, args...), strings.Join(dump, "\n"))
	}
	var used []usedGrant
	for _, rec := range records {
		if rec.granted && !rec.refunded && !rec.unknownAt {
			used = append(used, usedGrant{rec.at, rec.cost})
		}
	}
	slices.SortStableFunc(used, func(a, b usedGrant) int { return int(a.at - b.at) })
	var err error
	if cfg.bound != nil {
		err = cfg.bound(used)
	} else {
		err = bucketFamilyBound(cfg.rate, cfg.capacity, used)
	}
	if err != nil {
		failf("the grants used break the bound: %v", err)
	}
	// FIFO: an Acquire that arrived earlier is granted no later (with
	// lanes: in its lane), and no TryAcquire or Allow succeeded while it
	// waited.
	for i, a := range records {
		if !a.acquire || !a.granted {
			continue
		}
		for _, b := range records[i+1:] {
			if b.acquire && b.lane != a.lane {
				continue
			}
			if b.granted && !b.unknownAt && b.at < a.at {
				failf("call %d (arrived %v) granted at %v, before call %d (arrived %v) granted at %v", b.seq, b.arrived, b.at, a.seq, a.arrived, a.at)
			}
		}
	}
	// Delivery: never later than the grant's instant, unless the owner was
	// stalled from then until the delivery.
	for _, rec := range records {
		if !rec.acquire || !rec.granted || rec.delivered <= rec.at {
			continue
		}
		free := rec.at
		for moved := true; moved; {
			moved = false
			for _, s := range stalls {
				if st, end := s[0].Sub(t0), s[1].Sub(t0); st <= free && free < end {
					free, moved = end, true
				}
			}
		}
		if rec.delivered > free {
			failf("call %d granted at %v was delivered at %v; the owner was free from %v", rec.seq, rec.at, rec.delivered, free)
		}
	}
}

// bucketFamilyBound checks burst + floor(rate·d) over every closed interval
// [at_i, at_j] of the grants, sorted by instant.
func bucketFamilyBound(r algorithms.Rate, capacity int64, used []usedGrant) error {
	for i := range used {
		var sum int64
		for k := i - 1; k >= 0 && used[k].at == used[i].at; k-- {
			sum += used[k].cost
		}
		for j := i; j < len(used); j++ {
			sum += used[j].cost
			d := int64(used[j].at - used[i].at)
			if limit := capacity + d*r.Count/int64(r.Per); sum > limit {
				return fmt.Errorf("%d units in [%v, %v], bound %d", sum, used[i].at, used[j].at, limit)
			}
		}
	}
	return nil
}

// slidingWindowBound checks that no half-open window (t-w, t] holds more
// than limit.
func slidingWindowBound(limit int64, w time.Duration, used []usedGrant) error {
	for j := range used {
		var sum int64
		for i := j; i >= 0 && used[i].at > used[j].at-w; i-- {
			sum += used[i].cost
		}
		for k := j + 1; k < len(used) && used[k].at == used[j].at; k++ {
			sum += used[k].cost
		}
		if sum > limit {
			return fmt.Errorf("%d units in (%v, %v], limit %d", sum, used[j].at-w, used[j].at, limit)
		}
	}
	return nil
}

// fixedWindowBound checks each window aligned to the Unix epoch (synctest's
// clock starts on one, for every window that divides a second).
func fixedWindowBound(limit int64, w time.Duration, used []usedGrant) error {
	sums := map[int64]int64{}
	for _, u := range used {
		k := int64(u.at / w)
		if sums[k] += u.cost; sums[k] > limit {
			return fmt.Errorf("%d units in window %d of %v, limit %d", sums[k], k, w, limit)
		}
	}
	return nil
}
