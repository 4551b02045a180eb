package algorithms_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// TestAnInstantBeforeTheOriginIsNotDecidedAtTheOrigin pins the rule behind
// the concurrent bound: a caller that read its instant, was descheduled,
// and decides after the owner moved the origin past that instant must not
// be decided as if it had come at the origin. The cell took its burst at
// x; the origin then moved beyond x + tau, where the cell is idle; a
// decision for an instant before x must not find room there, since at its
// own instant the burst was spent (it goes to the owner instead: open
// false).
func TestAnInstantBeforeTheOriginIsNotDecidedAtTheOrigin(t *testing.T) {
	rate := algorithms.Rate{Count: 1_000_000_007, Per: 1000 * time.Second}
	const burst = 20
	c, err := algorithms.NewCells(rate, burst)
	if err != nil {
		t.Fatal(err)
	}
	span := algorithms.CellsSpan(c)
	c.Advance(t0)
	var cell algorithms.Cell
	stale := instant(int64(span / 4))
	x := stale.Add(time.Microsecond)
	for i := range burst {
		if ok, _, open := c.TryAdmitAt(&cell, x, 1); !ok || !open {
			t.Fatalf("unit %d of the burst refused", i)
		}
	}
	for c.Generation() < 2 { // the origin moves past x + tau
		c.Advance(x.Add(span))
		x = x.Add(span)
		c.Refresh(&cell)
	}
	ok, _, open := c.TryAdmitAt(&cell, stale, 1)
	if ok {
		t.Fatalf("admitted at an instant where the burst was spent (open %v)", open)
	}
	if d, open := c.TryAllowAt(&cell, stale, 1); d.Allowed {
		t.Fatalf("TryAllowAt allowed at an instant where the burst was spent (open %v)", open)
	}
}
