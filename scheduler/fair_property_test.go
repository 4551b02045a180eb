package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/scheduler"
)

// gcraPacer is a GCRA in nanoseconds for the property tests: a unit every
// `every` ns, bursts of up to `burst` units. Fair and the reference each get
// their own copy.
type gcraPacer struct {
	every, burst, tat int64
}

func (p *gcraPacer) decide(at, cost int64) (bool, int64) {
	tat := max(p.tat, at)
	next := tat + cost*p.every
	if earliest := next - p.burst*p.every; earliest > at {
		return false, earliest
	}
	p.tat = next
	return true, 0
}

// recorder is the Owner of the Fair under test.
type recorder struct {
	p       *gcraPacer
	granted []refGrant
}

func (r *recorder) Decide(at, cost int64) (bool, int64) { return r.p.decide(at, cost) }
func (r *recorder) Granted(n *scheduler.Node[int], at int64) {
	r.granted = append(r.granted, refGrant{n.Value, at})
}

// TestFairAgainstReference drives Fair and the reference with one random
// script of pushes, removals anywhere, grants at late and early wake-ups,
// floors changed on the way, holds and re-timings, and requires the same
// grants at the same instants, the same wake-ups, the same head and the
// same Due after every step.
func TestFairAgainstReference(t *testing.T) {
	seeds, steps := testutil.Volume(300, 3000), 400
	testutil.ReportDecisions(t, seeds*int64(steps))
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		rng := rand.New(rand.NewPCG(seed, 14))
		checkAgainstReference(t, seed, rng, steps)
	}
}

func checkAgainstReference(t *testing.T, seed uint64, rng *rand.Rand, steps int) {
	t.Helper()
	var f scheduler.Fair[int]
	ref := newRefFair()
	every := int64(1 + rng.IntN(50))
	burst := int64(1 + rng.IntN(30))
	rec := &recorder{p: &gcraPacer{every: every, burst: burst}}
	refPacer := &gcraPacer{every: every, burst: burst}

	nflows := 1 + rng.IntN(12)
	classes := 1 + rng.IntN(3)
	if rng.IntN(5) == 0 {
		classes = scheduler.Classes
	}
	flows := make([]*scheduler.Flow[int], nflows)
	refFlows := make([]*refFlow, nflows)
	for i := range flows {
		w := int64(1 + rng.IntN(10))
		if rng.IntN(10) == 0 {
			w = 1 + rng.Int64N(scheduler.MaxWeight)
		}
		c := rng.IntN(classes)
		flows[i] = new(scheduler.Flow[int])
		flows[i].Init(w, c)
		refFlows[i] = ref.addFlow(w, int64(c))
	}
	if rng.IntN(2) == 0 { // most of the interest is in the levels
		floor := 1 + rng.Int64N(scheduler.FloorScale/2)
		f.SetFloor(floor, 0)
		ref.setFloor(floor, 0)
	}
	type queued struct {
		n  *scheduler.Node[int]
		rn *refNode
		fl int
	}
	var live []queued
	now, id := int64(0), 0
	fail := func(step int, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d step %d: %s", seed, step, fmt.Sprintf(format, args...))
	}
	for step := range steps {
		switch x := rng.IntN(100); {
		case x < 45: // an arrival
			i := rng.IntN(nflows)
			cost := int64(1 + rng.IntN(int(burst)))
			n := &scheduler.Node[int]{Value: id, Cost: cost, Arrival: now}
			rn := &refNode{id: id, cost: cost, arrival: now, flow: refFlows[i]}
			id++
			f.Push(n, flows[i])
			ref.push(rn)
			live = append(live, queued{n, rn, i})
		case x < 57: // a cancellation anywhere
			if len(live) == 0 {
				continue
			}
			k := rng.IntN(len(live))
			q := live[k]
			got, want := f.Remove(q.n, flows[q.fl], now), ref.remove(q.rn, now)
			if got != want {
				fail(step, "Remove(%d) = %v, reference %v", q.n.Value, got, want)
			}
			live = append(live[:k], live[k+1:]...)
		case x < 60:
			floor := []int64{0, 1, 100_000, 250_000, 500_000}[rng.IntN(5)]
			f.SetFloor(floor, now)
			ref.setFloor(floor, now)
		case x < 62:
			until := now + rng.Int64N(200)
			f.Hold(until)
			ref.hold = max(ref.hold, until)
		case x < 64: // the owner's capacity changed: a refund, a new rate
			back := rng.Int64N(3 * every)
			rec.p.tat -= back
			refPacer.tat -= back
			f.Retime()
			ref.headRetry = 0
		default: // a wake-up, on time or late
			now += rng.Int64N(3 * every * burst)
			wake := f.Grant(now, rec)
			granted, refWake := ref.grant(now, refPacer.decide)
			if fmt.Sprint(rec.granted) != fmt.Sprint(granted) || wake != refWake {
				fail(step, "Grant(%d) granted %v wake %d; reference %v wake %d", now, rec.granted, wake, granted, refWake)
			}
			for _, g := range granted {
				for k, q := range live {
					if q.n.Value == g.id {
						live = append(live[:k], live[k+1:]...)
						break
					}
				}
			}
			rec.granted = rec.granted[:0]
		}
		if f.Len() != ref.len() {
			fail(step, "Len %d, reference %d", f.Len(), ref.len())
		}
		var cost int64
		for _, q := range live {
			cost += q.rn.cost
		}
		if f.Cost() != cost {
			fail(step, "Cost %d, the waiters' %d", f.Cost(), cost)
		}
		h, _ := f.Head()
		if (h == nil) != (ref.head == nil) || h != nil && h.Value != ref.head.id {
			fail(step, "head %v, reference %v", h, ref.head)
		}
		// Due fixes an unknown head's floor to now; every third step, so
		// that Grant also meets heads whose floor is still unknown.
		if step%3 == 0 {
			if d, rd := f.Due(now), ref.due(now); d != rd {
				fail(step, "Due(%d) = %d, reference %d", now, d, rd)
			}
		}
	}
}

// FuzzFairAgainstReference is TestFairAgainstReference with the fuzzer
// choosing the script's seed and length:
//
//	go test -run '^$' -fuzz FuzzFairAgainstReference ./scheduler
func FuzzFairAgainstReference(f *testing.F) {
	f.Add(uint64(1), uint64(14), uint16(400))
	f.Add(uint64(7), uint64(3), uint16(40))
	f.Fuzz(func(t *testing.T, a, b uint64, steps uint16) {
		checkAgainstReference(t, a, rand.New(rand.NewPCG(a, b)), 1+int(steps%1000))
	})
}
