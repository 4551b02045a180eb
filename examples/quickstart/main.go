// Command quickstart is the README's first program: a limiter of 30
// requests per second, owned by one goroutine, closed when done.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
)

func main() {
	// 30 requests per second, one at a time: GCRA paces them 33.3ms apart.
	gcra, err := algorithms.NewGCRA(algorithms.PerSecond(30), 1)
	if err != nil {
		log.Fatal(err) // zero, negative or overflowing rates are errors, never panics
	}
	lim := actor.MustNew(gcra, actor.WithName("api")) // one goroutine owns it from now on
	defer lim.Close()                                 // ...until Close, which ends that goroutine

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	for i := range 5 {
		// Waits its turn, FIFO; fails at once if the grant would come after ctx's deadline.
		if _, err := lim.Acquire(ctx, 1); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("request %d at +%v\n", i, time.Since(start).Round(10*time.Millisecond))
	}
}
