package algorithms_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// TestPropertyDetachCarriesOnExactly plays random timelines on a few cells
// and their twin GCRAs (as TestPropertyCellsDecideAsGCRA does), detaches
// one cell at a random step, gates and generations behind included, and
// then drives the detached GCRA and the twin in lockstep: the same
// decisions, the same gate, and the same decisions again after both are
// given a new rate or burst. The cell is retired from the detach on.
func TestPropertyDetachCarriesOnExactly(t *testing.T) {
	t.Parallel()
	var gated, tuned int
	for run := range uint64(propertyRuns()) {
		rng, seed := seeded(t.Name(), run)
		c, rate, capacity := randomCells(t, rng, seed)
		h := &cellsHarness{t: t, label: fmt.Sprintf("%s\nCells(%v, %d)", seed, rate, capacity), c: c, rng: rng}
		for range 1 + rng.IntN(3) {
			g, _ := algorithms.NewGCRA(rate, capacity)
			h.twins = append(h.twins, &cellTwin{g: g})
		}
		span := int64(algorithms.CellsSpan(c))
		interval := gap(rate)
		tl := &timeline{rng: rng, gap: interval, idle: min(capacity*interval, span/4), capacity: capacity}
		for range rng.IntN(propertySteps / 2) {
			tl.next()
			if rng.IntN(25) == 0 && tl.now < 1<<61-span {
				tl.now += span/4 + rng.Int64N(span)
			}
			tl.saw(h.step(h.pick(), tl.now, 1+rng.Int64N(capacity)))
		}
		tw := h.pick()
		h.owner(instant(tl.now), false)
		g := c.Detach(&tw.cell)
		if tw.gated {
			gated++
		}
		if !c.Retired(&tw.cell) {
			h.fail("the cell is not retired after Detach")
		}
		if ok, _, open := c.TryAdmitAt(&tw.cell, instant(tl.now), 1); ok || open {
			h.fail("TryAdmitAt decided on a detached cell")
		}
		for step := range 200 {
			_, cost := tl.next()
			n := tl.now
			at := instant(n)
			switch op := rng.IntN(10); {
			case op < 4:
				got, want := g.AllowAt(at, cost), tw.g.AllowAt(at, cost)
				if !sameDecision(got, want) {
					h.fail("detached, step %d: AllowAt(t0%+dns, %d) = %s, GCRA %s", step, n, cost, showDecision(got), showDecision(want))
				}
				tl.saw(got)
			case op < 7:
				ok, wait, open := g.TryAdmitAt(at, cost)
				wantOK, wantWait, wantOpen := tw.g.TryAdmitAt(at, cost)
				if ok != wantOK || wait != wantWait || open != wantOpen {
					h.fail("detached, step %d: TryAdmitAt(t0%+dns, %d) = %v, %v, open %v; GCRA %v, %v, open %v", step, n, cost, ok, wait, open, wantOK, wantWait, wantOpen)
				}
			case op < 8:
				got, want := g.AllowOrCloseAt(at, cost), tw.g.AllowOrCloseAt(at, cost)
				if !sameDecision(got, want) {
					h.fail("detached, step %d: AllowOrCloseAt(t0%+dns, %d) = %s, GCRA %s", step, n, cost, showDecision(got), showDecision(want))
				}
			case op < 9:
				g.OpenGate()
				tw.g.OpenGate()
			default:
				r := cellRate(rng)
				b := randomCapacity(rng)
				if rng.IntN(2) == 0 {
					errGot, errWant := g.SetRateAt(at, r), tw.g.SetRateAt(at, r)
					if (errGot == nil) != (errWant == nil) {
						h.fail("detached: SetRateAt(%v) = %v, GCRA %v", r, errGot, errWant)
					}
				} else {
					errGot, errWant := g.SetBurstAt(at, b), tw.g.SetBurstAt(at, b)
					if (errGot == nil) != (errWant == nil) {
						h.fail("detached: SetBurstAt(%d) = %v, GCRA %v", b, errGot, errWant)
					}
				}
				tuned++
				tl.capacity = g.Capacity()
			}
		}
	}
	t.Logf("%d detached with the gate closed, %d changes after detaching", gated, tuned)
	if runs := int(propertyRuns()); gated < runs/20 || tuned < runs*10 {
		t.Fatalf("too few gated detaches (%d) or changes (%d)", gated, tuned)
	}
}

// TestDetachIsOneStepWithTheFastPath has goroutines take units off a full
// cell with TryAdmitAt, all at one instant, while the owner detaches it;
// then the detached GCRA is emptied at the same instant. Whatever the
// interleaving, exactly the burst passes in all: an admission made on the
// cell after the detach, or one made before that the GCRA does not carry,
// would make more; one the detach counted twice, fewer. Run it with -race.
func TestDetachIsOneStepWithTheFastPath(t *testing.T) {
	const burst = 64
	c, err := algorithms.NewCells(algorithms.Rate{Count: 1000, Per: time.Second}, burst)
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(t0)
	at := t0.Add(time.Second)
	var onCell, raced int
	for round := range 300 {
		var cell algorithms.Cell
		var passed atomic.Int64
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				<-start
				for {
					ok, _, open := c.TryAdmitAt(&cell, at, 1)
					if !open {
						return // detached
					}
					if !ok {
						return // empty: the detach may come later
					}
					passed.Add(1)
					runtime.Gosched()
				}
			})
		}
		close(start)
		for range round % 7 {
			runtime.Gosched()
		}
		g := c.Detach(&cell)
		wg.Wait()
		before := passed.Load()
		after := int64(0)
		for {
			ok, _, open := g.TryAdmitAt(at, 1)
			if !open {
				t.Fatalf("round %d: the detached GCRA's gate is closed", round)
			}
			if !ok {
				break
			}
			after++
		}
		if before+after != burst {
			t.Fatalf("round %d: %d units on the cell and %d on the detached GCRA, want %d in all", round, before, after, burst)
		}
		onCell += int(before)
		if before > 0 && after > 0 {
			raced++
		}
	}
	t.Logf("%d units decided on cells, %d rounds split between cell and GCRA", onCell, raced)
	if raced < 10 {
		t.Fatalf("only %d rounds detached while callers were deciding", raced)
	}
}
