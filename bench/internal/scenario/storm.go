package scenario

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// StormSpec is a cancellation storm: Waiters callers each call Wait once,
// all at the start; a random half of them (Cancelled of them) have their
// context cancelled at a random moment while the queue is still busy.
type StormSpec struct {
	Waiters, Cancelled int
	Rate               algorithms.Rate
	Burst              int64
	Seed               uint64
}

// StormResult is what one storm measured.
type StormResult struct {
	Granted, Cancelled int
	// Span is the time from the first grant to the last.
	Span time.Duration
	// Share is the rate the grants achieved over Span as a share of the
	// configured rate: (Granted-Burst) / (rate·Span). Capacity that a
	// cancelled waiter held and did not give back shows as a share below 1;
	// so does the lateness with which the last grant is seen (Go's timers
	// fire up to about 1ms late when the process is idle), which is why a
	// storm should span a second or more.
	Share float64
}

// RunStorm runs s against a fresh limiter of kind k. Cancellation moments
// are drawn uniformly from the time the non-cancelled waiters alone need,
// so that every cancellation lands while waiters are queued.
func RunStorm(k WaiterKind, s StormSpec) (StormResult, error) {
	if !k.Cancels {
		return StormResult{}, fmt.Errorf("%s: Wait has no context", k.Name)
	}
	w, err := k.New(s.Rate, s.Burst)
	if err != nil {
		return StormResult{}, err
	}
	defer w.Close()

	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	busy := time.Duration(int64(s.Waiters-s.Cancelled) * int64(s.Rate.Per) / s.Rate.Count)
	cancelAt := make([]time.Duration, s.Waiters) // 0: never cancelled
	for _, i := range rng.Perm(s.Waiters)[:s.Cancelled] {
		cancelAt[i] = 1 + time.Duration(rng.Int64N(int64(busy)))
	}

	grantedAt := make([]int64, 0, s.Waiters)
	var mu sync.Mutex
	var cancelled, failed atomic.Int64
	var firstErr atomic.Value
	start := make(chan struct{})
	var ready, done, timers sync.WaitGroup
	cancels := make([]context.CancelFunc, s.Waiters)
	var t0 time.Time // written before start is closed
	for i := range s.Waiters {
		ctx := context.Background()
		var cancel context.CancelFunc
		if cancelAt[i] > 0 {
			ctx, cancel = context.WithCancel(ctx)
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			err := w.Wait(ctx)
			at := int64(time.Since(t0))
			switch {
			case err == nil:
				mu.Lock()
				grantedAt = append(grantedAt, at)
				mu.Unlock()
			case errors.Is(err, context.Canceled):
				cancelled.Add(1)
			default:
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		}()
		cancels[i] = cancel
	}
	ready.Wait()
	runtime.GC()
	t0 = time.Now()
	close(start)
	timerList := make([]*time.Timer, 0, s.Cancelled)
	for i, cancel := range cancels {
		if cancel != nil {
			timers.Add(1)
			timerList = append(timerList, time.AfterFunc(cancelAt[i]-time.Since(t0), func() {
				defer timers.Done()
				cancel()
			}))
		}
	}
	done.Wait()
	// Every waiter has returned; a cancellation still pending has nothing
	// left to cancel. Stop it, and wait for those already running.
	for _, t := range timerList {
		if t.Stop() {
			timers.Done()
		}
	}
	timers.Wait()
	for _, cancel := range cancels {
		if cancel != nil {
			cancel() // release the contexts of waiters that were granted
		}
	}

	if n := failed.Load(); n > 0 {
		return StormResult{}, fmt.Errorf("%s: %d waiters failed: %v", k.Name, n, firstErr.Load())
	}
	slices.Sort(grantedAt)
	res := StormResult{Granted: len(grantedAt), Cancelled: int(cancelled.Load())}
	if res.Granted > 1 {
		res.Span = time.Duration(grantedAt[len(grantedAt)-1] - grantedAt[0])
		ideal := float64(int64(res.Granted)-s.Burst) * float64(s.Rate.Per) / float64(s.Rate.Count)
		res.Share = ideal / float64(res.Span)
	}
	return res, nil
}
