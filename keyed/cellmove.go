package keyed

import "github.com/sluicehq/sluice/algorithms"

// A key's cell moves: from one table to the next on a rebuild, into an
// entry when the key first needs one and back when it no longer does.
// The move is one atomic step with the lock-free decisions on the cell
// (algorithms.Cells.Move): an admission made before it travels with the
// state, and a decision after it finds the old cell retired and looks
// again under the lock.

// moveCell retires src and gives dst, a cell nobody decides on yet, the
// state src had; a src retired already leaves dst alone.
func (s *shard[K]) moveCell(dst, src *algorithms.Cell) { s.cells().Move(dst, src) }
