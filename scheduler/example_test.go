package scheduler_test

import (
	"fmt"

	"github.com/sluicehq/sluice/scheduler"
)

// paced admits one unit every 100 ns, like a GCRA with burst 1; instants are
// nanoseconds on the owner's timeline.
type paced struct{ next int64 }

func (p *paced) Decide(at, cost int64) (bool, int64) {
	if at < p.next {
		return false, p.next
	}
	p.next = at + 100*cost
	return true, 0
}

func (p *paced) Granted(n *scheduler.Node[string], at int64) {
	fmt.Printf("%s granted at %d\n", n.Value, at)
}

// An owner pushes waiters as they arrive and calls Grant when it wakes. A
// wake-up that comes late (at 250 instead of 100) still grants each waiter
// at its scheduled instant, so the rate is kept; Grant returns when to wake
// next.
func ExampleQueue_Grant() {
	var q scheduler.Queue[string]
	owner := &paced{}
	for _, name := range []string{"a", "b", "c", "d"} {
		q.Push(&scheduler.Node[string]{Value: name, Cost: 1})
	}
	wake := q.Grant(250, owner)
	fmt.Println("wake at", wake, "with", q.Len(), "waiting")
	// Output:
	// a granted at 0
	// b granted at 100
	// c granted at 200
	// wake at 300 with 1 waiting
}
