package algorithms_test

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
)

// The property tests drive each algorithm through random timelines in
// lockstep with its reference model (reference_test.go) and compare every
// decision exactly: Allowed, RetryAt, Remaining and ResetAt. Every denial's
// RetryAt is also probed on clones (allowed there, denied a nanosecond
// earlier), and at the end of each timeline the conformance bound is checked
// over every interval of the admissions.
//
// The default run makes propertyRuns·propertySteps = 3·10^4 decisions per
// algorithm with a fixed seed, and the full-volume run (SLUICE_VOLUME=full,
// docs/testing.md) 10^6; -args -seed=N explores other timelines.

var seedFlag = flag.Uint64("seed", 0, "base seed for the property tests (0: the fixed default)")

const (
	defaultSeed   = 0x51_1ce_2026
	propertySteps = 500
)

// propertyRuns is how many timelines each property test draws.
func propertyRuns() int64 { return testutil.Volume(60, 2000) }

// seeded returns the generator for one run of a test, and how to reproduce
// it, which the test prints on failure.
func seeded(test string, run uint64) (*rand.Rand, string) {
	base := *seedFlag
	if base == 0 {
		base = defaultSeed
	}
	return rand.New(rand.NewPCG(base, run)),
		fmt.Sprintf("seed %#x, run %d (rerun: go test ./algorithms -run '^%s$' -args -seed=%#x)", base, run, test, base)
}

// namedRates are the rates the issue names, and others whose emission
// interval is not a whole number of nanoseconds.
var namedRates = []algorithms.Rate{
	algorithms.PerSecond(3),
	algorithms.PerMinute(7),
	algorithms.PerSecond(10),
	{Count: 1000, Per: 500 * time.Millisecond},
	algorithms.PerMinute(100),
	{Count: 5, Per: time.Hour},
	algorithms.PerHour(3),
	{Count: 7, Per: 3 * time.Nanosecond},
	{Count: 1, Per: time.Nanosecond},
	{Count: 3, Per: time.Nanosecond},
	{Count: 1_000_000_007, Per: time.Second},
}

func randomRate(rng *rand.Rand) algorithms.Rate {
	switch rng.IntN(5) {
	case 0:
		return namedRates[rng.IntN(len(namedRates))]
	case 1: // intervals of a few ns, or a fraction of one
		return algorithms.Rate{Count: 1 + rng.Int64N(60), Per: time.Duration(1 + rng.Int64N(100))}
	case 2:
		return algorithms.Rate{Count: 1 + rng.Int64N(60), Per: time.Duration(1 + rng.Int64N(int64(10*time.Millisecond)))}
	case 3:
		return algorithms.Rate{Count: 1 + rng.Int64N(1000), Per: time.Duration(1 + rng.Int64N(int64(10*time.Second)))}
	default:
		units := []time.Duration{time.Second, time.Minute, time.Hour}
		return algorithms.Rate{Count: 1 + rng.Int64N(7), Per: time.Duration(1+rng.Int64N(9)) * units[rng.IntN(3)]}
	}
}

// randomCapacity is between 1 and 20, often small.
func randomCapacity(rng *rand.Rand) int64 { return 1 + rng.Int64N(1+rng.Int64N(20)) }

func randomWindow(rng *rand.Rand) time.Duration {
	switch rng.IntN(4) {
	case 0:
		return []time.Duration{time.Second, time.Minute, 333 * time.Millisecond, 7 * time.Nanosecond, time.Hour}[rng.IntN(5)]
	case 1:
		return time.Duration(1 + rng.Int64N(100))
	case 2:
		return time.Duration(1 + rng.Int64N(int64(10*time.Millisecond)))
	default:
		return time.Duration(1 + rng.Int64N(int64(10*time.Second)))
	}
}

// timeline generates instants and costs: the same instant, steps around the
// typical gap, exactly the last RetryAt and a nanosecond before it, steps
// back in time, idle spells, and costs from 1 to the capacity with a few that
// can never pass.
type timeline struct {
	rng      *rand.Rand
	gap      int64 // typical time between admissions, ns
	idle     int64 // time to recover the full capacity, ns
	capacity int64
	now      int64 // latest instant generated
	retry    int64 // the last RetryAt, ns since t0; 0 for none
}

func (g *timeline) next() (n, cost int64) {
	n = g.now
	switch x := g.rng.IntN(100); {
	case x < 20: // same instant
	case x < 45:
		n += 1 + g.rng.Int64N(g.gap)
	case x < 55:
		n += g.rng.Int64N(3*g.gap + 1)
	case x < 63 && g.retry > 0:
		n = g.retry
	case x < 68 && g.retry > 0:
		n = g.retry - 1
	case x < 72:
		n++
	case x < 80: // back in time
		n -= 1 + g.rng.Int64N(2*g.gap)
	case x < 83:
		n += g.idle + g.rng.Int64N(4*g.idle+1)
	default:
		n += g.rng.Int64N(g.gap/4 + 1)
	}
	g.now = max(g.now, n)
	switch y := g.rng.IntN(100); {
	case y < 50:
		cost = 1
	case y < 85:
		cost = 1 + g.rng.Int64N(g.capacity)
	case y < 92:
		cost = g.capacity
	case y < 94:
		cost = 0
	case y < 96:
		cost = -1 - g.rng.Int64N(3)
	case y < 98:
		cost = g.capacity + 1 + g.rng.Int64N(3)
	case y < 99:
		cost = math.MaxInt64
	default:
		cost = math.MinInt64
	}
	return n, cost
}

func (g *timeline) saw(d algorithms.Decision) {
	if !d.RetryAt.IsZero() {
		g.retry = d.RetryAt.Sub(t0).Nanoseconds()
	}
}

// run drives h through steps decisions from g.
func (h *harness) run(g *timeline, steps int) int {
	for range steps {
		g.saw(h.step(g.next()))
	}
	h.finish()
	return steps
}

// fastPath adapts a Gated algorithm's lock-free TryAllowAt to the
// Algorithm interface, failing the test if the gate is ever reported closed.
type fastPath struct {
	t testing.TB
	g algorithms.Gated
}

func (f fastPath) AllowAt(now time.Time, cost int64) algorithms.Decision {
	d, open := f.g.TryAllowAt(now, cost)
	if !open {
		f.t.Fatalf("TryAllowAt(%v, %d) reported the gate closed; nobody closed it", now, cost)
	}
	return d
}
func (f fastPath) Capacity() int64             { return f.g.Capacity() }
func (f fastPath) Clone() algorithms.Algorithm { return fastPath{f.t, gatedClone(f.g)} }
func (f fastPath) open(now time.Time, cost int64) bool {
	_, open := gatedClone(f.g).TryAllowAt(now, cost)
	return open
}

func gatedClone(g algorithms.Gated) algorithms.Gated {
	return g.(algorithms.Cloner).Clone().(algorithms.Gated)
}

// withFastPaths adds to h, when a's configuration has a lock-free form, a
// clone of a deciding on its TryAllowAt and one checked on its TryAdmitAt.
func withFastPaths(t testing.TB, h *harness, name string, a algorithms.Gated) {
	if fast := (fastPath{t, gatedClone(a)}); fast.open(t0, 1) {
		h.names, h.algs = append(h.names, name+".TryAllowAt"), append(h.algs, fast)
		lean := leanPath(gatedClone(a))
		if prev := h.also; prev != nil {
			h.also = func(latest, cost int64, want algorithms.Decision) error {
				if err := prev(latest, cost, want); err != nil {
					return err
				}
				return lean(latest, cost, want)
			}
		} else {
			h.also = lean
		}
	}
}

// leanPath checks TryAdmitAt against the model. It is called at the latest
// instant, since TryAdmitAt does not record the instants it sees.
func leanPath(g algorithms.Gated) func(latest, cost int64, want algorithms.Decision) error {
	return func(latest, cost int64, want algorithms.Decision) error {
		now := instant(latest)
		ok, wait, open := g.TryAdmitAt(now, cost)
		switch {
		case cost < 1 || cost > g.Capacity():
			if ok || wait != 0 || open {
				return fmt.Errorf("TryAdmitAt(t0%+dns, %d) = %v, %v, open %v; want refused", latest, cost, ok, wait, open)
			}
		case !open || ok != want.Allowed || (!ok && !now.Add(wait).Equal(want.RetryAt)):
			return fmt.Errorf("TryAdmitAt(t0%+dns, %d) = %v, wait %v, open %v; want %s", latest, cost, ok, wait, open, showDecision(want))
		}
		return nil
	}
}

// gap returns the emission interval Per/Count rounded up to a whole ns.
func gap(r algorithms.Rate) int64 { return max(1, (int64(r.Per)+r.Count-1)/r.Count) }

func TestPropertyBucketFamily(t *testing.T) {
	t.Parallel()
	decisions := 0
	for run := range uint64(propertyRuns()) {
		rng, seed := seeded(t.Name(), run)
		rate, capacity := randomRate(rng), randomCapacity(rng)
		g, err1 := algorithms.NewGCRA(rate, capacity)
		tb, err2 := algorithms.NewTokenBucket(rate, capacity)
		lb, err3 := algorithms.NewLeakyBucket(rate, capacity)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("%s: rate %v, capacity %d: %v %v %v", seed, rate, capacity, err1, err2, err3)
		}
		h := &harness{
			t:     t,
			label: fmt.Sprintf("%s\nGCRA(%v, %d), TokenBucket(%[3]d, %[2]v), LeakyBucket(%[3]d, %[2]v)", seed, rate, capacity),
			names: []string{"GCRA", "TokenBucket", "LeakyBucket"},
			algs:  []algorithms.Algorithm{g, tb, lb},
			ref:   newRefBucket(capacity, rate),
			probe: true, probeEvery: 5,
		}
		// More of each decide on the lock-free paths when there are some.
		withFastPaths(t, h, "GCRA", g)
		withFastPaths(t, h, "TokenBucket", tb)
		withFastPaths(t, h, "LeakyBucket", lb)
		interval := gap(rate)
		decisions += h.run(&timeline{rng: rng, gap: interval, idle: capacity * interval, capacity: capacity}, propertySteps)
	}
	testutil.ReportDecisions(t, 3*int64(decisions))
	if want := int(propertyRuns() * propertySteps); decisions < want {
		t.Fatalf("only %d decisions per algorithm, want %d", decisions, want)
	}
}

func TestPropertySlidingWindow(t *testing.T) {
	t.Parallel()
	var decisions int64
	for run := range uint64(propertyRuns()) {
		rng, seed := seeded(t.Name(), run)
		limit, window := randomCapacity(rng), randomWindow(rng)
		w, err := algorithms.NewSlidingWindow(algorithms.Rate{Count: limit, Per: window})
		if err != nil {
			t.Fatal(err)
		}
		h := &harness{
			t:     t,
			label: fmt.Sprintf("%s\nSlidingWindow(%d, %v)", seed, limit, window),
			names: []string{"SlidingWindow"},
			algs:  []algorithms.Algorithm{w},
			ref:   &refSliding{limit: limit, window: int64(window)},
			probe: true, probeEvery: 5,
		}
		decisions += int64(h.run(&timeline{rng: rng, gap: max(1, int64(window)/limit), idle: int64(window), capacity: limit}, propertySteps))
	}
	testutil.ReportDecisions(t, decisions)
}

func TestPropertyFixedWindow(t *testing.T) {
	t.Parallel()
	var decisions int64
	for run := range uint64(propertyRuns()) {
		rng, seed := seeded(t.Name(), run)
		limit, window := randomCapacity(rng), randomWindow(rng)
		w, err := algorithms.NewFixedWindow(algorithms.Rate{Count: limit, Per: window})
		if err != nil {
			t.Fatal(err)
		}
		h := &harness{
			t:     t,
			label: fmt.Sprintf("%s\nFixedWindow(%d, %v)", seed, limit, window),
			names: []string{"FixedWindow"},
			algs:  []algorithms.Algorithm{w},
			ref:   &refFixed{limit: limit, window: int64(window)},
			probe: true, probeEvery: 5,
		}
		withFastPaths(t, h, "FixedWindow", w)
		// Start anywhere in a window, not only at its beginning.
		decisions += int64(h.run(&timeline{rng: rng, gap: max(1, int64(window)/limit), idle: int64(window), capacity: limit,
			now: rng.Int64N(int64(window))}, propertySteps))
	}
	testutil.ReportDecisions(t, decisions)
}
