package algorithms_test

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// The cells' property tests drive a Cells with a few cells through random
// timelines in lockstep with one GCRA per cell (same rate and burst) and
// compare every answer exactly: the owner's AllowAt and AllowOrCloseAt,
// the fast path's TryAllowAt and TryAdmitAt (gate and all), OpenGate,
// Retire and Revive, and the decisions of clones. The timelines jump far
// enough, for rates with fine ticks, to move the shared origin hundreds of
// times, leaving cells one, two and three generations behind when they are
// next touched. Instants never go back here, where a GCRA's latest instant
// seen changes nothing; TestPropertyCellsDecideAtTheirInstant covers
// instants that go back.

// cellRates are rates whose ticks are fine (count near 2^30), so that a
// generation counts only about two seconds, mixed with everyday ones.
func cellRate(rng *rand.Rand) algorithms.Rate {
	switch rng.IntN(3) {
	case 0:
		return algorithms.Rate{Count: 1_000_000_007, Per: time.Duration(1+rng.Int64N(1_000_000)) * time.Second}
	case 1:
		return algorithms.Rate{Count: 1<<30 - 35, Per: time.Duration(1 + rng.Int64N(int64(time.Hour)))}
	}
	return randomRate(rng)
}

// randomCells returns cells of a random rate and capacity.
func randomCells(t *testing.T, rng *rand.Rand, seed string) (*algorithms.Cells, algorithms.Rate, int64) {
	rate, capacity := cellRate(rng), randomCapacity(rng)
	c, err := algorithms.NewCells(rate, capacity)
	if err != nil {
		t.Fatalf("%s: NewCells(%v, %d): %v", seed, rate, capacity, err)
	}
	return c, rate, capacity
}

// cellTwin is one cell and the GCRA it must decide as.
type cellTwin struct {
	cell    algorithms.Cell
	g       *algorithms.GCRA
	gated   bool   // the owner closed the gate
	written uint64 // a generation the cell is known to be in, or later
}

type cellsHarness struct {
	t     *testing.T
	label string
	c     *algorithms.Cells
	twins []*cellTwin
	rng   *rand.Rand
	// behind[k] counts the calls on a cell k generations behind.
	behind [4]int
}

// owner is what the cells' owner does before a call that may start a
// generation at at: it refreshes every cell three generations behind, so
// that none is ever four behind.
func (h *cellsHarness) owner(at time.Time, force bool) {
	if !force && algorithms.CellsFit(h.c, at) {
		return
	}
	gen := h.c.Generation()
	for _, tw := range h.twins {
		if gen-tw.written >= 3 {
			h.c.Refresh(&tw.cell)
			tw.written = gen
		}
	}
}

// touched notes a call that wrote tw's cell in the current generation;
// before is the generation when the call began.
func (h *cellsHarness) touched(tw *cellTwin, before uint64) {
	if lag := before - tw.written; lag > 3 {
		h.fail("cell %d generations behind: the harness failed to refresh it", lag)
	} else {
		h.behind[lag]++
	}
	tw.written = h.c.Generation()
}

func (h *cellsHarness) fail(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("%s\n%s", h.label, fmt.Sprintf(format, args...))
}

// step makes one call of a random kind on tw at instant n and returns
// the decision it made, if any.
func (h *cellsHarness) step(tw *cellTwin, n, cost int64) (d algorithms.Decision) {
	h.t.Helper()
	at := instant(n)
	gen := h.c.Generation()
	switch op := h.rng.IntN(20); {
	case op < 8: // the owner's
		h.owner(at, false)
		name, got, want := "AllowAt", algorithms.Decision{}, algorithms.Decision{}
		if op < 5 {
			got, want = h.c.AllowAt(&tw.cell, at, cost), tw.g.AllowAt(at, cost)
		} else {
			name, got, want = "AllowOrCloseAt", h.c.AllowOrCloseAt(&tw.cell, at, cost), tw.g.AllowOrCloseAt(at, cost)
			tw.gated = tw.gated || !got.Allowed && !got.RetryAt.IsZero()
		}
		h.touched(tw, gen)
		if !sameDecision(got, want) {
			h.fail("%s(t0%+dns, %d) = %s, GCRA %s", name, n, cost, showDecision(got), showDecision(want))
		}
		d = got
	case op < 12:
		got, open := h.c.TryAllowAt(&tw.cell, at, cost)
		if !open && !tw.gated && !algorithms.CellsFit(h.c, at) {
			// Beyond the generation: the fast path leaves that to the
			// owner, whose next clock reading moves the origin.
			h.owner(at, true)
			h.c.Advance(at)
			gen = h.c.Generation()
			got, open = h.c.TryAllowAt(&tw.cell, at, cost)
		}
		want, wantOpen := tw.g.TryAllowAt(at, cost)
		if open != wantOpen || open && !sameDecision(got, want) {
			h.fail("TryAllowAt(t0%+dns, %d) = %s, open %v; GCRA %s, open %v", n, cost, showDecision(got), open, showDecision(want), wantOpen)
		}
		if open {
			h.touched(tw, gen)
			d = got
		}
	case op < 16:
		ok, wait, open := h.c.TryAdmitAt(&tw.cell, at, cost)
		if !open && !tw.gated && cost >= 1 && cost <= h.c.Capacity() && !algorithms.CellsFit(h.c, at) {
			h.owner(at, true)
			h.c.Advance(at)
			gen = h.c.Generation()
			ok, wait, open = h.c.TryAdmitAt(&tw.cell, at, cost)
		}
		wantOK, wantWait, wantOpen := tw.g.TryAdmitAt(at, cost)
		if ok != wantOK || wait != wantWait || open != wantOpen {
			h.fail("TryAdmitAt(t0%+dns, %d) = %v, %v, open %v; GCRA %v, %v, open %v", n, cost, ok, wait, open, wantOK, wantWait, wantOpen)
		}
		if open {
			h.touched(tw, gen)
		}
	case op < 17:
		h.c.OpenGate(&tw.cell)
		tw.g.OpenGate()
		tw.gated = false
	case op < 18:
		h.owner(at, true)
		h.c.Advance(at)
	case op < 19:
		h.owner(at, false)
		full := !tw.gated && !tw.g.AllowAt(at, 0).ResetAt.After(at)
		retired := h.c.Retire(&tw.cell, at)
		h.touched(tw, gen)
		if retired != full {
			h.fail("Retire(t0%+dns) = %v, but the GCRA is full %v (gate closed %v)", n, retired, full, tw.gated)
		}
		if !retired {
			break
		}
		if !h.c.Retired(&tw.cell) {
			h.fail("Retired is false after Retire")
		}
		if _, open := h.c.TryAllowAt(&tw.cell, at, 1); open {
			h.fail("TryAllowAt decided on a retired cell")
		}
		if ok, _, open := h.c.TryAdmitAt(&tw.cell, at, 1); ok || open {
			h.fail("TryAdmitAt decided on a retired cell")
		}
		if h.c.Retire(&tw.cell, at) {
			h.fail("Retire twice")
		}
		h.c.Revive(&tw.cell)
		if h.c.Retired(&tw.cell) {
			h.fail("Retired is true after Revive")
		}
	default:
		// Clones decide alike, and leave the originals as they were.
		cl, gl := h.c.Clone(&tw.cell), tw.g.Clone()
		m := n
		for range 4 {
			m += h.rng.Int64N(int64(time.Second))
			c := 1 + h.rng.Int64N(h.c.Capacity())
			if got, want := cl.AllowAt(instant(m), c), gl.AllowAt(instant(m), c); !sameDecision(got, want) {
				h.fail("clone: AllowAt(t0%+dns, %d) = %s, GCRA's clone %s", m, c, showDecision(got), showDecision(want))
			}
		}
	}
	return d
}

// pick returns a twin, the later ones rarely, so that some cells stay
// untouched while the origin moves.
func (h *cellsHarness) pick() *cellTwin {
	for i, tw := range h.twins {
		if i == len(h.twins)-1 || h.rng.IntN(8) != 0 {
			return tw
		}
	}
	return nil
}

func TestPropertyCellsDecideAsGCRA(t *testing.T) {
	t.Parallel()
	var rebases uint64
	var behind [4]int
	for run := range uint64(propertyRuns()) {
		rng, seed := seeded(t.Name(), run)
		c, rate, capacity := randomCells(t, rng, seed)
		h := &cellsHarness{t: t, label: fmt.Sprintf("%s\nCells(%v, %d)", seed, rate, capacity), c: c, rng: rng}
		for range 1 + rng.IntN(4) {
			g, _ := algorithms.NewGCRA(rate, capacity)
			h.twins = append(h.twins, &cellTwin{g: g})
		}
		span := int64(algorithms.CellsSpan(c))
		interval := gap(rate)
		tl := &timeline{rng: rng, gap: interval, idle: min(capacity*interval, span/4), capacity: capacity}
		for range propertySteps {
			_, cost := tl.next()
			if rng.IntN(25) == 0 && tl.now < 1<<61-span { // a rebase or two
				tl.now += span/4 + rng.Int64N(span)
			}
			n := tl.now // never back: see the top of the file
			tl.saw(h.step(h.pick(), n, cost))
		}
		rebases += c.Generation()
		for k := range 4 {
			behind[k] += h.behind[k]
		}
	}
	t.Logf("%d rebases; calls on cells 0, 1, 2 and 3 generations behind: %v", rebases, behind)
	// At least what 200 runs made, in proportion: 1000 rebases, and calls
	// 1, 2 and 3 generations behind 200, 50 and 20 times.
	runs := int(propertyRuns())
	if int(rebases) < 5*runs || behind[1] < runs || behind[2] < runs/4 || behind[3] < runs/10 {
		t.Fatalf("the runs moved the origin too little: %d rebases, behind %v", rebases, behind)
	}
}

// refTAT is GCRA as the cells decide it, written the obvious way with
// exact integers and no latest instant: every instant is decided at
// itself. Ticks are 1/count ns since t0; a unit is per ticks.
type refTAT struct {
	count, per, tau *big.Int
	b               int64
	tat             *big.Int // nil: full since forever
}

func newRefTAT(rate algorithms.Rate, burst int64) *refTAT {
	g := new(big.Int).GCD(nil, nil, big.NewInt(rate.Count), big.NewInt(int64(rate.Per)))
	r := &refTAT{
		count: new(big.Int).Quo(big.NewInt(rate.Count), g),
		per:   new(big.Int).Quo(big.NewInt(int64(rate.Per)), g),
		b:     burst,
	}
	r.tau = new(big.Int).Mul(big.NewInt(burst), r.per)
	return r
}

// instant returns the first whole ns at or after tick t.
func (r *refTAT) instant(t *big.Int) time.Time {
	q, m := new(big.Int).QuoRem(t, r.count, new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return instant(q.Int64())
}

func (r *refTAT) decide(at, cost int64) algorithms.Decision {
	n := new(big.Int).Mul(big.NewInt(at), r.count)
	base := n
	if r.tat != nil && r.tat.Cmp(n) > 0 {
		base = r.tat
	}
	limit := new(big.Int).Add(n, r.tau)
	room := new(big.Int).Sub(limit, base)
	if room.Sign() < 0 {
		room.SetInt64(0)
	}
	remaining := new(big.Int).Quo(room, r.per).Int64()
	if cost < 1 || cost > r.b {
		return algorithms.Decision{Remaining: remaining, ResetAt: r.instant(base)}
	}
	inc := new(big.Int).Mul(big.NewInt(cost), r.per)
	next := new(big.Int).Add(base, inc)
	if next.Cmp(limit) <= 0 {
		r.tat = next
		left := new(big.Int).Sub(limit, next)
		return algorithms.Decision{Allowed: true, Remaining: left.Quo(left, r.per).Int64(), ResetAt: r.instant(next)}
	}
	retry := new(big.Int).Add(r.tat, inc)
	retry.Sub(retry, r.tau)
	return algorithms.Decision{RetryAt: r.instant(retry), Remaining: remaining, ResetAt: r.instant(base)}
}

// TestPropertyCellsDecideAtTheirInstant checks cells against refTAT on
// timelines that also step back in time (by less than half a generation,
// as concurrent callers' clock readings do), on the owner's AllowAt and on
// TryAdmitAt, rebases included.
func TestPropertyCellsDecideAtTheirInstant(t *testing.T) {
	t.Parallel()
	for run := range uint64(propertyRuns()) {
		rng, seed := seeded(t.Name(), run)
		c, rate, capacity := randomCells(t, rng, seed)
		span := int64(algorithms.CellsSpan(c))
		var cell algorithms.Cell
		ref := newRefTAT(rate, capacity)
		interval := gap(rate)
		tl := &timeline{rng: rng, gap: min(interval, span/16), idle: min(capacity*interval, span/8), capacity: capacity}
		latest := int64(0)
		for range propertySteps {
			n, cost := tl.next()
			if rng.IntN(25) == 0 && tl.now < 1<<61-span {
				tl.now += span/4 + rng.Int64N(span/2)
				n = tl.now
			}
			n = max(n, latest-span/4) // back by less than half a generation
			latest = max(latest, n)
			at := instant(n)
			want := ref.decide(n, cost)
			if rng.IntN(2) == 0 {
				c.Advance(instant(latest)) // one cell: always refreshed
				c.Refresh(&cell)
				if got := c.AllowAt(&cell, at, cost); !sameDecision(got, want) {
					t.Fatalf("%s\nCells(%v, %d): AllowAt(t0%+dns, %d) = %s, want %s", seed, rate, capacity, n, cost, showDecision(got), showDecision(want))
				}
				tl.saw(want)
				continue
			}
			ok, wait, open := c.TryAdmitAt(&cell, at, cost)
			if !open && cost >= 1 && cost <= capacity {
				c.Advance(instant(latest))
				c.Refresh(&cell)
				ok, wait, open = c.TryAdmitAt(&cell, at, cost)
			}
			switch {
			case cost < 1 || cost > capacity:
				if ok || wait != 0 || open {
					t.Fatalf("%s: TryAdmitAt(t0%+dns, %d) = %v, %v, %v; want refused", seed, n, cost, ok, wait, open)
				}
			case !open || ok != want.Allowed || !ok && !at.Add(wait).Equal(want.RetryAt):
				t.Fatalf("%s\nCells(%v, %d): TryAdmitAt(t0%+dns, %d) = %v, wait %v, open %v; want %s", seed, rate, capacity, n, cost, ok, wait, open, showDecision(want))
			}
			tl.saw(want)
		}
	}
}

func TestNewCellsRefusesWhatItCannotHold(t *testing.T) {
	for _, c := range []struct {
		rate  algorithms.Rate
		burst int64
	}{
		{algorithms.Rate{}, 1},
		{algorithms.PerSecond(10), 0},
		{algorithms.Rate{Count: 1<<31 + 1, Per: time.Second}, 1}, // 2^31+1 ticks per ns: no one-word form
		{algorithms.Every(time.Hour), 1 << 40},                   // a span of millions of years
	} {
		if _, err := algorithms.NewCells(c.rate, c.burst); !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("NewCells(%v, %d) = %v, want ErrInvalidConfig", c.rate, c.burst, err)
		}
	}
	c, err := algorithms.NewCells(algorithms.PerMinute(100), 100)
	if err != nil {
		t.Fatal(err)
	}
	if c.Rate() != algorithms.PerMinute(100) || c.Capacity() != 100 {
		t.Errorf("Rate %v, Capacity %d", c.Rate(), c.Capacity())
	}
}

func TestTheZeroCellIsFullInEveryGeneration(t *testing.T) {
	rate := algorithms.Rate{Count: 1_000_000_007, Per: 1000 * time.Second}
	c, err := algorithms.NewCells(rate, 5)
	if err != nil {
		t.Fatal(err)
	}
	span := algorithms.CellsSpan(c)
	at := t0
	for gen := range 9 {
		c.Advance(at)
		if g := c.Generation(); g != uint64(gen+1) {
			t.Fatalf("Advance at t0+%v: generation %d, want %d", at.Sub(t0), g, gen+1)
		}
		var cell algorithms.Cell
		for i := range 5 {
			if ok, _, open := c.TryAdmitAt(&cell, at, 1); !ok || !open {
				t.Fatalf("generation %d: unit %d of a zero cell refused", gen+1, i)
			}
		}
		if ok, _, _ := c.TryAdmitAt(&cell, at, 1); ok {
			t.Fatalf("generation %d: a sixth unit admitted", gen+1)
		}
		at = at.Add(span)
	}
}

func TestAdoptTakesOnlyANewAlgorithmOfTheSameConfiguration(t *testing.T) {
	c, err := algorithms.NewCells(algorithms.PerMinute(100), 100)
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	fresh := func(a algorithms.Algorithm, err error) algorithms.Algorithm {
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	used := fresh(algorithms.NewGCRA(algorithms.PerMinute(100), 100))
	used.AllowAt(now, 1)
	later := fresh(algorithms.NewGCRA(algorithms.PerMinute(100), 100))
	later.AllowAt(now.Add(time.Hour), 0) // full, but it saw a later instant
	full := fresh(algorithms.NewGCRA(algorithms.PerMinute(100), 100))
	full.AllowAt(now.Add(-time.Hour), 100) // full again by now
	gated := fresh(algorithms.NewGCRA(algorithms.PerMinute(100), 100))
	gated.(*algorithms.GCRA).AllowOrCloseAt(now.Add(-time.Hour), 100)
	gated.(*algorithms.GCRA).AllowOrCloseAt(now.Add(-time.Hour), 1) // denied: the gate closes
	for _, tc := range []struct {
		name string
		alg  algorithms.Algorithm
		want bool
	}{
		{"new GCRA", fresh(algorithms.NewGCRA(algorithms.PerMinute(100), 100)), true},
		{"new TokenBucket", fresh(algorithms.NewTokenBucket(algorithms.PerMinute(100), 100)), true},
		{"new LeakyBucket", fresh(algorithms.NewLeakyBucket(algorithms.PerMinute(100), 100)), true},
		{"the same rate, written otherwise", fresh(algorithms.NewGCRA(algorithms.Rate{Count: 200, Per: 2 * time.Minute}, 100)), true},
		{"full again", full, true},
		{"another burst", fresh(algorithms.NewGCRA(algorithms.PerMinute(100), 99)), false},
		{"another rate", fresh(algorithms.NewGCRA(algorithms.PerMinute(101), 100)), false},
		{"used", used, false},
		{"saw a later instant", later, false},
		{"full again, but its gate closed", gated, false},
		{"a sliding window", fresh(algorithms.NewSlidingWindow(algorithms.PerMinute(100))), false},
	} {
		var cell algorithms.Cell
		if got := c.Adopt(&cell, tc.alg, now); got != tc.want {
			t.Errorf("%s: Adopt = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestACellInUseNeverLooksRetired decides at the last instant a generation
// counts, with a full burst and then a denial that closes the gate, in a
// generation whose bits are all ones: the word is then as close to the
// retired mark as a cell in use comes, and must not be it.
func TestACellInUseNeverLooksRetired(t *testing.T) {
	// One tick per ns: the generation counts nMax ticks exactly, so the last
	// instant it counts is as far as a TAT gets.
	c, err := algorithms.NewCells(algorithms.PerSecond(1), 1)
	if err != nil {
		t.Fatal(err)
	}
	span := algorithms.CellsSpan(c)
	at := t0
	for range 3 { // to generation 3
		c.Advance(at)
		at = at.Add(span)
	}
	if c.Generation() != 3 {
		t.Fatalf("generation %d, want 3", c.Generation())
	}
	origin := at.Add(-span).Add(-span / 2) // the last Advance's, half a span back
	for _, edge := range []time.Time{origin.Add(span - 1), origin.Add(span)} {
		var cell algorithms.Cell
		if d := c.AllowAt(&cell, edge, 1); !d.Allowed {
			t.Fatalf("AllowAt(origin%+v, 1) = %s", edge.Sub(origin), showDecision(d))
		}
		c.AllowOrCloseAt(&cell, edge, 1) // denied: the gate closes
		if c.Retired(&cell) {
			t.Fatalf("a cell in use at origin%+v reads as retired", edge.Sub(origin))
		}
		if c.Retire(&cell, edge.Add(10*time.Second)) {
			t.Fatalf("a gated cell was retired")
		}
	}
}

func ExampleCells() {
	// 100 per minute with bursts of 100, for every key: one word each.
	cells, err := algorithms.NewCells(algorithms.PerMinute(100), 100)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)
	cells.Advance(now) // the owner keeps the origin within reach of its clock
	keys := map[string]*algorithms.Cell{"alice": new(algorithms.Cell), "bob": new(algorithms.Cell)}

	d := cells.AllowAt(keys["alice"], now, 60)
	fmt.Println(d.Allowed, d.Remaining, "left; full again in", d.ResetAt.Sub(now))
	ok, wait, _ := cells.TryAdmitAt(keys["alice"], now, 60) // from any goroutine
	fmt.Println(ok, "retry in", wait)
	d = cells.AllowAt(keys["bob"], now, 100)
	fmt.Println(d.Allowed, d.Remaining, "left")
	// Output:
	// true 40 left; full again in 36s
	// false retry in 12s
	// true 0 left
}
