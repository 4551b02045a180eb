package actor_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
)

// A batch job and an interactive user share one API key of 100 requests a
// second. The batch queues a second's worth; in a lane of its own, the
// interactive user is not behind it.
func ExampleLimiter_Lane() {
	g, err := algorithms.NewGCRA(algorithms.PerSecond(100), 1)
	if err != nil {
		panic(err)
	}
	lim := actor.MustNew(g)
	defer lim.Close()
	batch, err := lim.Lane("batch", 1)
	if err != nil {
		panic(err)
	}
	interactive, err := lim.Lane("interactive", 1)
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 100 {
		go func() { _, _ = batch.Acquire(ctx, 1) }()
	}
	for { // the first passes at once, the others wait (a few pass if they were slow to start)
		if st := lim.Stats(); st.Waiting+int(st.Granted) == 100 {
			break
		}
		time.Sleep(time.Millisecond)
	}

	soon, cancelSoon := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelSoon()
	_, err = batch.Acquire(soon, 1) // behind its own lane's queue: told at once
	fmt.Println("batch within 500ms:", err == nil, "- deadline refused at once:", errors.Is(err, context.DeadlineExceeded))
	_, err = interactive.Acquire(soon, 1) // the next grant or the one after
	fmt.Println("interactive within 500ms:", err == nil)
	// Output:
	// batch within 500ms: false - deadline refused at once: true
	// interactive within 500ms: true
}
