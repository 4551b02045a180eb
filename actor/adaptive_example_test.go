package actor_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

// A server that sheds load: the limit starts at 2 and Gradient2 moves it
// from the latency of each request, which the pool measures from the grant
// to Done; a request past the limit is refused at once.
func ExampleAdaptivePool() {
	p, err := actor.NewAdaptivePool(&actor.Gradient2{}, actor.WithLimits(1, 2, 100), actor.WithoutQueue)
	if err != nil {
		panic(err)
	}
	defer p.Close()
	ctx := context.Background()
	a, _ := p.Acquire(ctx, 1)
	b, _ := p.Acquire(ctx, 1)
	_, err = p.Acquire(ctx, 1)
	fmt.Println("third refused:", errors.Is(err, permits.ErrRateLimited))

	p.Done(a, actor.Success)  // served: its latency is a sample
	p.Done(b, actor.Overload) // the downstream said 503: a load signal
	st := p.Stats()
	fmt.Println("in flight:", st.InFlight, "range:", st.Floor, st.Ceiling)
	// Output:
	// third refused: true
	// in flight: 0 range: 1 100
}
