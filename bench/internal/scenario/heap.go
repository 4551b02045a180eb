package scenario

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Blocker parks n goroutines in some blocking call, so that HeapPerWaiter
// can weigh them. Start starts them (each calls ready just before it
// blocks) and returns blocked, which returns once all n are parked, and
// release, which unblocks them; Start's caller waits for the goroutines
// itself.
type Blocker struct {
	Name  string
	Start func(n int, spawn func(func())) (blocked func() error, release func(), err error)
}

// HeapPerWaiter returns the live heap, in bytes per goroutine, that n
// goroutines parked in b hold (runtime.MemStats.HeapAlloc after a GC, with
// them parked, minus the same before they started). The goroutines' own
// descriptors are counted too; subtract a baseline Blocker (ChannelBlocker)
// to leave what the blocking call itself costs.
func HeapPerWaiter(b Blocker, n int) (float64, error) {
	var wg sync.WaitGroup
	spawn := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}
	var m0, m1 runtime.MemStats
	gc()
	runtime.ReadMemStats(&m0)
	blocked, release, err := b.Start(n, spawn)
	if err != nil {
		return 0, err
	}
	err = blocked()
	if err == nil {
		gc()
		runtime.ReadMemStats(&m1)
	}
	release()
	wg.Wait()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", b.Name, err)
	}
	return (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / float64(n), nil
}

// gc collects twice, so that sync.Pools are empty too.
func gc() {
	runtime.GC()
	runtime.GC()
}

// waitUntil polls cond for up to ten seconds, then lets goroutines that
// are between their last signal and parking get there.
func waitUntil(what string, cond func() bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	return nil
}

// ChannelBlocker parks goroutines receiving from one plain channel: the
// baseline to subtract.
var ChannelBlocker = Blocker{Name: "plain channel", Start: func(n int, spawn func(func())) (func() error, func(), error) {
	ch := make(chan struct{})
	var ready sync.WaitGroup
	ready.Add(n)
	for range n {
		spawn(func() {
			ready.Done()
			<-ch
		})
	}
	blocked := func() error { ready.Wait(); return waitUntil("parked receivers", func() bool { return true }) }
	return blocked, func() { close(ch) }, nil
}}

// SluiceBlocker parks goroutines in Acquire on a sluice limiter that has
// just spent its only permit for the next hour. With cancellable, each
// passes the same cancellable context (one more channel in its select);
// otherwise context.Background.
func SluiceBlocker(cancellable bool) Blocker {
	name := "sluice Acquire, context.Background"
	if cancellable {
		name = "sluice Acquire, cancellable context"
	}
	return Blocker{Name: name, Start: func(n int, spawn func(func())) (func() error, func(), error) {
		l, err := SluiceGCRA(DeniedRate, DeniedBurst)
		if err != nil {
			return nil, nil, err
		}
		if _, err := l.TryAcquire(1); err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		if !cancellable {
			ctx = context.Background()
		}
		for range n {
			spawn(func() { _, _ = l.Acquire(ctx, 1) })
		}
		blocked := func() error {
			return waitUntil("queued waiters", func() bool { return l.Stats().Waiting == n })
		}
		return blocked, func() { cancel(); _ = l.Close() }, nil
	}}
}

// XTimeBlocker parks goroutines in x/time/rate's Wait, which needs a
// cancellable context to be released; they share one.
var XTimeBlocker = Blocker{Name: "x/time/rate Wait, cancellable context", Start: func(n int, spawn func(func())) (func() error, func(), error) {
	l := rate.NewLimiter(rate.Every(time.Hour), 1)
	l.Allow()
	ctx, cancel := context.WithCancel(context.Background())
	var ready sync.WaitGroup
	ready.Add(n)
	for range n {
		spawn(func() {
			ready.Done()
			_ = l.Wait(ctx)
		})
	}
	blocked := func() error {
		ready.Wait()
		// Each Wait reserves one token before it parks on its timer.
		return waitUntil("reservations", func() bool { return l.Tokens() < float64(1-n) })
	}
	return blocked, cancel, nil
}}
