package algorithms_test

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
)

// TestCellsDecideConcurrentlyWithinTheBound has goroutines decide on a few
// cells with TryAdmitAt at instants from a shared virtual clock they push
// forward, now and then by 300ms, while the owner moves the origin (a
// generation counts about two seconds at this rate), refreshes the cells,
// and decides, closes gates and opens them itself. A goroutine whose
// instant lies beyond the generation asks the owner to move it, as a
// limiter's caller would send its request to the owner. The demand is more than
// twice the rate. Every admission is recorded with its instant, and each
// cell's admissions must keep GCRA's bound over every interval: an
// admission lost by a conversion, a rebase or a lost race would let later
// ones through beyond it. Run it with -race.
func TestCellsDecideConcurrentlyWithinTheBound(t *testing.T) {
	rate := algorithms.Rate{Count: 1_000_000_007, Per: 1000 * time.Second} // about 10^6 per second, in ticks of 10^-9 ns
	const (
		burst   = 20
		nCells  = 4
		workers = 4
	)
	steps := int(testutil.Volume(20_000, 1_000_000))
	c, err := algorithms.NewCells(rate, burst)
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64 // ns since t0
	c.Advance(t0)
	cells := make([]algorithms.Cell, nCells)
	logs := make([][nCells][]admission, workers+1) // one per goroutine, the owner's last

	done := make(chan struct{})
	ask := make(chan chan struct{})
	var owner sync.WaitGroup
	owner.Go(func() {
		rng := rand.New(rand.NewPCG(7, 7))
		log := &logs[workers]
		gen := c.Generation()
		for {
			var asked chan struct{}
			select {
			case <-done:
				return
			case asked = <-ask:
			default:
			}
			n := clock.Load()
			at := instant(n)
			c.Advance(at)
			if g := c.Generation(); g != gen {
				for i := range cells {
					c.Refresh(&cells[i])
				}
				gen = g
			}
			i, cost := rng.IntN(nCells), 1+rng.Int64N(3)
			switch rng.IntN(8) {
			case 0:
				if d := c.AllowOrCloseAt(&cells[i], at, cost); d.Allowed {
					log[i] = append(log[i], admission{n, cost})
				}
			case 1, 2:
				c.OpenGate(&cells[i])
			}
			if asked != nil {
				close(asked)
			}
			runtime.Gosched()
		}
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			log := &logs[w]
			for range steps {
				step := rng.Int64N(400)
				if rng.IntN(2000) == 0 {
					step = int64(300 * time.Millisecond)
				}
				n := clock.Add(step)
				i, cost := rng.IntN(nCells), 1+rng.Int64N(3)
				ok, _, open := c.TryAdmitAt(&cells[i], instant(n), cost)
				if !open && !algorithms.CellsFit(c, instant(n)) {
					reply := make(chan struct{})
					ask <- reply
					<-reply
					ok, _, open = c.TryAdmitAt(&cells[i], instant(n), cost)
				}
				if !open && !c.Gated(&cells[i]) {
					// The instant lies before the origin: this goroutine
					// was descheduled while the owner moved it. It decides
					// at a fresh reading, as keyed's caller then has the
					// owner decide at its own.
					n = clock.Load()
					ok, _, _ = c.TryAdmitAt(&cells[i], instant(n), cost)
				}
				if ok {
					log[i] = append(log[i], admission{n, cost})
				}
			}
		})
	}
	wg.Wait()
	close(done)
	owner.Wait()

	var total int
	for i := range nCells {
		var events []admission
		for _, log := range logs {
			events = append(events, log[i]...)
		}
		slices.SortFunc(events, func(a, b admission) int { return int(a.at - b.at) })
		if err := bucketBound(burst, rate, events); err != nil {
			t.Fatalf("cell %d: %v", i, err)
		}
		total += len(events)
	}
	t.Logf("%d admissions over %v, %d generations", total, time.Duration(clock.Load()), c.Generation())
	testutil.ReportDecisions(t, int64(total))
	if total < steps/2 || c.Generation() < uint64(max(1, steps/2500)) { // 8 in 20,000 steps
		t.Fatalf("too little happened: %d admissions, %d generations", total, c.Generation())
	}
}

// TestRetireIsOneStepWithTheFastPath has goroutines decide on one cell
// while the owner retires it whenever it is full and revives it a moment
// later. A call that began after the cell was retired and ended before it
// was revived must not have admitted anything; and an admission that ended
// before a retirement must have made it fail, unless the cell was full
// again by the retirement's instant (a unit lasts 1000ns here).
func TestRetireIsOneStepWithTheFastPath(t *testing.T) {
	c, err := algorithms.NewCells(algorithms.Rate{Count: 1000, Per: time.Millisecond}, 3)
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64
	c.Advance(t0)
	var cell algorithms.Cell
	var phase atomic.Int64     // odd while the cell is retired
	var retiredAt atomic.Int64 // the instant of the latest retirement
	var passed, retirements, looks atomic.Int64
	done := make(chan struct{})
	var owner sync.WaitGroup
	owner.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			looks.Add(1)
			if n := clock.Load(); c.Retire(&cell, instant(n)) {
				retirements.Add(1)
				retiredAt.Store(n)
				phase.Add(1)
				runtime.Gosched()
				phase.Add(1)
				c.Revive(&cell)
			}
			runtime.Gosched()
		}
	})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			for step := range 50_000 {
				n := clock.Add(rng.Int64N(2000))
				if step%64 == 0 {
					// The cell fills up again; wait for the owner to look.
					n = clock.Add(10_000)
					for seen := looks.Load(); looks.Load() == seen; {
						runtime.Gosched()
					}
				}
				before := phase.Load()
				ok, _, _ := c.TryAdmitAt(&cell, instant(n), 1)
				if ok {
					runtime.Gosched() // let a retirement racing the admission show
				}
				after := phase.Load()
				if ok && before%2 == 1 && after == before {
					t.Errorf("admitted on a retired cell")
					return
				}
				// Retired after the admission and not revived yet: the
				// admission came first, so the cell was full again then.
				if r := retiredAt.Load(); ok && before%2 == 0 && after == before+1 && r < n+1000 {
					t.Errorf("admitted at t0+%dns, and retired at t0+%dns as if it had not been", n, r)
					return
				}
				if ok {
					passed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(done)
	owner.Wait()
	t.Logf("%d admissions, %d retirements", passed.Load(), retirements.Load())
	if passed.Load() == 0 || retirements.Load() == 0 {
		t.Fatalf("too little happened: %d admissions, %d retirements", passed.Load(), retirements.Load())
	}
}
