package algorithms

import "time"

// SlidingRing returns the number of entries w's ring can hold, for tests of
// its memory.
func SlidingRing(w *SlidingWindow) int { return len(w.events) }

// CellsFit reports whether at lies within what c's current generation
// counts, so that the fast path can decide there.
func CellsFit(c *Cells, at time.Time) bool {
	_, _, ok := c.ep.Load().cellTicks(at)
	return ok
}

// CellsSpan returns how far past its origin a generation of c counts.
func CellsSpan(c *Cells) time.Duration { return time.Duration(c.cfg.nMaxNs) }

// Retired reports whether cell was retired and not revived since. Safe
// from any goroutine.
func (c *Cells) Retired(cell *Cell) bool { return cell.w.Load() == retiredWord }

// Revive puts a retired cell back in use, full, as a new one: what it was
// when it was retired, for every instant from then on. Owner only.
func (c *Cells) Revive(cell *Cell) { cell.w.CompareAndSwap(retiredWord, 0) }
