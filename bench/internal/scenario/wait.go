package scenario

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// WaitSpec is a waiting workload: Goroutines callers share Permits calls to
// Wait on a limiter admitting Rate with bursts of Burst. Each caller calls
// Wait again as soon as it returns, so the limiter always has waiters.
type WaitSpec struct {
	Goroutines int
	Rate       algorithms.Rate
	Burst      int64
	Permits    int
}

// Ideal is the shortest time from the first grant to the last one that the
// limit allows: Burst at once, then one every emission interval.
func (s WaitSpec) Ideal() time.Duration {
	n := max(int64(s.Permits)-s.Burst, 0)
	return time.Duration(n * int64(s.Rate.Per) / s.Rate.Count)
}

// FIFOApart is how much later an overtaker must have arrived for
// WaitResult.FIFOViolationsApart to count it (see FIFOViolationsApart).
// The stamps are taken outside the limiter, and a caller's thread can be
// descheduled between its stamp and its call, or between its grant and its
// stamp: on a loaded two-core machine every library, FIFO or not, shows
// callers overtaken by a few milliseconds of such noise.
const FIFOApart = 10 * time.Millisecond

// WaitResult is what one run of a WaitSpec measured.
type WaitResult struct {
	Wall time.Duration // first grant to last grant
	// CPU is the user+system time of the whole process during the run
	// (getrusage), or 0 where the platform cannot tell.
	CPU time.Duration
	// FIFOViolations counts callers overtaken by a caller that arrived
	// strictly later (FIFOViolations); FIFOViolationsApart only those
	// overtaken by a caller that arrived more than FIFOApart later.
	FIFOViolations, FIFOViolationsApart int
	// MaxExcess is the largest number of grants beyond b + floor(r·d) over
	// any window (MaxExcess); 0 or less means never above the bound.
	MaxExcess int64
}

// RunWait runs s against a fresh limiter of kind k. Every caller stamps its
// arrival (a shared atomic sequence number and the clock) just before it
// calls Wait, and the clock and a grant sequence number just after Wait
// returns; the conformance and FIFO checks use those stamps.
func RunWait(k WaiterKind, s WaitSpec) (WaitResult, error) {
	w, err := k.New(s.Rate, s.Burst)
	if err != nil {
		return WaitResult{}, err
	}
	defer w.Close()

	arrival := make([]int64, s.Permits)
	arrivedAt := make([]int64, s.Permits)
	grant := make([]int64, s.Permits)
	grantedAt := make([]int64, s.Permits)
	var tickets, arrivals, grants, failures atomic.Int64
	tickets.Store(int64(s.Permits))
	var firstErr atomic.Value

	ctx := context.Background()
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	var t0 time.Time // written before start is closed
	for range s.Goroutines {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for {
				i := tickets.Add(-1)
				if i < 0 {
					return
				}
				arrivedAt[i] = int64(time.Since(t0))
				arrival[i] = arrivals.Add(1)
				if err := w.Wait(ctx); err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
				grantedAt[i] = int64(time.Since(t0))
				grant[i] = grants.Add(1)
			}
		}()
	}
	ready.Wait()
	runtime.GC()
	cpu0 := CPUTime()
	t0 = time.Now()
	close(start)
	done.Wait()
	cpu := CPUTime() - cpu0

	if n := failures.Load(); n > 0 {
		return WaitResult{}, fmt.Errorf("%s: %d of %d Wait calls failed: %v", k.Name, n, s.Permits, firstErr.Load())
	}
	res := WaitResult{
		CPU:                 cpu,
		FIFOViolations:      FIFOViolations(arrival, grant),
		FIFOViolationsApart: FIFOViolationsApart(arrivedAt, grant, FIFOApart),
	}
	slices.Sort(grantedAt)
	res.Wall = time.Duration(grantedAt[len(grantedAt)-1] - grantedAt[0])
	res.MaxExcess = MaxExcess(grantedAt, s.Rate.Count, s.Rate.Per, s.Burst)
	return res, nil
}
