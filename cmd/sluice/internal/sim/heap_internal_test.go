package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDueHeapPopsInOrder: the heap yields reservations by instant, ties in
// the order pushed, under pushes and pops interleaved.
func TestDueHeapPopsInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var d dueHeap
	var want []queued // a plain sorted list
	var seq uint64
	for range 20000 {
		if rng.IntN(3) > 0 || len(want) == 0 {
			seq++
			p := reservation{at: rng.Int64N(50), cost: int64(seq)}
			d.push(p)
			want = append(want, queued{p, seq})
			slices.SortStableFunc(want, func(a, b queued) int {
				if a.before(&b) {
					return -1
				}
				return 1
			})
			continue
		}
		got := d.pop()
		if got != want[0].reservation {
			t.Fatalf("popped %+v, want %+v", got, want[0].reservation)
		}
		want = want[1:]
	}
}
