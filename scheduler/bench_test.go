package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/scheduler"
)

// oneAtATime admits one waiter per Grant: the owner's capacity comes back
// one grant at a time, as under a rate limit that is always busy.
type oneAtATime[T any] struct {
	free bool
	last *scheduler.Node[T]
}

func (o *oneAtATime[T]) Decide(at, _ int64) (bool, int64) {
	if !o.free {
		return false, at + 1
	}
	o.free = false
	return true, 0
}

func (o *oneAtATime[T]) Granted(n *scheduler.Node[T], _ int64) { o.last = n }

// BenchmarkGrant is the cost of one grant and the arrival that replaces it,
// with every lane busy: the FIFO Queue, and Fair with 1 to 10,000 busy
// flows of mixed weights, strict and with a floor between two classes.
// Issue 14's goal: at 1,000 lanes at most twice the cost at 1.
func BenchmarkGrant(b *testing.B) {
	b.Run("queue", func(b *testing.B) {
		var q scheduler.Queue[int]
		nodes := make([]scheduler.Node[int], 4)
		for i := range nodes {
			nodes[i].Cost = 1
			q.Push(&nodes[i])
		}
		o := &oneAtATime[int]{}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			o.free = true
			q.Grant(int64(i), o)
			q.Push(o.last)
		}
	})
	for _, floor := range []int64{0, scheduler.FloorScale / 10} {
		for _, lanes := range []int{1, 10, 100, 1000, 10000} {
			name := fmt.Sprintf("fair/lanes=%d", lanes)
			if floor != 0 {
				name = fmt.Sprintf("fair-floor/lanes=%d", lanes)
			}
			b.Run(name, func(b *testing.B) {
				var f scheduler.Fair[int]
				f.SetFloor(floor, 0)
				flows := make([]scheduler.Flow[int], lanes)
				nodes := make([]scheduler.Node[int], 2*lanes+2)
				for i := range nodes {
					fl := &flows[i%lanes]
					if fl.Weight() == 0 {
						fl.Init(int64(1+i%7), i%2)
					}
					nodes[i] = scheduler.Node[int]{Value: i % lanes, Cost: int64(1 + i%5)}
					f.Push(&nodes[i], fl)
				}
				o := &oneAtATime[int]{}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					o.free = true
					f.Grant(int64(i), o)
					f.Push(o.last, &flows[o.last.Value])
				}
			})
		}
	}
}
