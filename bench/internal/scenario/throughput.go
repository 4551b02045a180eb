package scenario

import (
	"runtime"
	"sync"
	"time"
)

// Micro is one subject of a throughput measurement: New builds it and
// returns the body that runs n operations on the calling goroutine, and
// the function that releases what New made (a limiter's goroutine).
type Micro struct {
	Name string
	New  func() (loop func(n int), stop func(), err error)
}

// Throughput runs m on g goroutines for about d and returns the wall time
// per operation (what b.RunParallel reports: elapsed time over the
// operations of all goroutines together) and the heap allocations per
// operation. Like package testing, it first grows the operation count until
// a run is long enough to predict the count that takes d.
func Throughput(m Micro, g int, d time.Duration) (nsPerOp, allocsPerOp float64, err error) {
	loop, stop, err := m.New()
	if err != nil {
		return 0, 0, err
	}
	defer stop()
	n := 16 * g
	for {
		el := RunParallel(loop, g, n)
		if el >= d/5 || n >= 1<<40 {
			n = int(float64(n) * float64(d) / float64(max(el, 1)))
			break
		}
		grow := float64(n) * float64(d/5) / float64(max(el, 1)) * 1.2
		n = int(min(max(grow, float64(n)+1), 100*float64(n)))
	}
	n = max(n, g)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	el := RunParallel(loop, g, n)
	runtime.ReadMemStats(&m1)
	n = n / g * g
	return float64(el) / float64(n), float64(m1.Mallocs-m0.Mallocs) / float64(n), nil
}

// RunParallel runs n/g operations (at least one) on each of g goroutines,
// started together, and returns the time until the last one is done.
func RunParallel(loop func(n int), g, n int) time.Duration {
	per := max(n/g, 1)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for range g {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			loop(per)
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	return time.Since(t0)
}
