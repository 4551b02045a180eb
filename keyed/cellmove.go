package keyed

import (
	"sync/atomic"
	"unsafe"

	"github.com/sluicehq/sluice/algorithms"
)

// A key's cell moves: from one table to the next on a rebuild, into an
// entry when the key first needs one and back when it no longer does.
// algorithms.Cells has no method that takes a cell's word whatever its
// state (Retire takes only a full one, Detach makes a GCRA of it), and a
// move must be one atomic step with the lock-free decisions on the cell:
// an admission made before it travels with the word, and a decision after
// it must find the old cell out of use. So keyed reads the word itself: an
// algorithms.Cell is one atomic.Uint64, and a retired one holds every bit
// (algorithms' retiredWord), which Cells.Retired and the fast path's
// decisions recognise. TestMovingACellKeepsItsStateAndRetiresTheOld checks
// both facts against algorithms, so that a change there fails here.

const retiredWord = ^uint64(0)

func cellWord(c *algorithms.Cell) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(c)) }

// moveCell retires src and gives dst, a cell nobody decides on yet, the
// word src had; a src retired already leaves dst alone.
func moveCell(dst, src *algorithms.Cell) {
	if w := cellWord(src).Swap(retiredWord); w != retiredWord {
		cellWord(dst).Store(w)
	}
}

// An algorithms.Cell is one word: this fails to compile if it grows.
var _ = [1]struct{}{}[unsafe.Sizeof(algorithms.Cell{})-8]
