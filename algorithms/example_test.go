package algorithms_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

func ExampleParseRate() {
	for _, s := range []string{"100/minute", "10/s", "5/1h", "1000/500ms", "3/hour", "10/fortnight", "0/s"} {
		r, err := algorithms.ParseRate(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%-11s = %d per %v, written %v\n", s, r.Count, r.Per, r)
	}
	// Output:
	// 100/minute  = 100 per 1m0s, written 100/m
	// 10/s        = 10 per 1s, written 10/s
	// 5/1h        = 5 per 1h0m0s, written 5/h
	// 1000/500ms  = 1000 per 500ms, written 1000/500ms
	// 3/hour      = 3 per 1h0m0s, written 3/h
	// sluice: invalid configuration: rate "10/fortnight": period "fortnight" is neither a unit (s, minute, hour, ...) nor a duration (1h, 500ms)
	// rate "0/s": sluice: invalid configuration: rate count must be positive, got 0
}

// GCRA with a burst of 1 paces strictly: one request per emission interval.
// A denial says exactly when to come back.
func ExampleGCRA() {
	g, _ := algorithms.NewGCRA(algorithms.PerSecond(10), 1)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, at := range []time.Duration{0, 30 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond, 200 * time.Millisecond} {
		d := g.AllowAt(t0.Add(at), 1)
		if d.Allowed {
			fmt.Printf("t0+%-5v allowed\n", at)
		} else {
			fmt.Printf("t0+%-5v denied, retry at t0+%v\n", at, d.RetryAt.Sub(t0))
		}
	}
	// Output:
	// t0+0s    allowed
	// t0+30ms  denied, retry at t0+100ms
	// t0+100ms allowed
	// t0+150ms denied, retry at t0+200ms
	// t0+200ms allowed
}

// At 3/s the emission interval is 333,333,333⅓ ns. GCRA keeps the fraction,
// so RetryAt is exact to the nanosecond and three units pass per second.
func ExampleGCRA_fractionalRate() {
	g, _ := algorithms.NewGCRA(algorithms.PerSecond(3), 3)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	g.AllowAt(t0, 3) // the whole burst
	for cost := int64(1); cost <= 3; cost++ {
		d := g.AllowAt(t0, cost)
		fmt.Printf("cost %d: retry at t0+%dns\n", cost, d.RetryAt.Sub(t0).Nanoseconds())
	}
	// Output:
	// cost 1: retry at t0+333333334ns
	// cost 2: retry at t0+666666667ns
	// cost 3: retry at t0+1000000000ns
}

// The fast path: any goroutine may call TryAllowAt while the owner keeps the
// gate open. The owner closes it in the same step as a denial, so that
// nobody passes its waiters, and reopens it when they are served.
func ExampleGCRA_TryAllowAt() {
	g, _ := algorithms.NewGCRA(algorithms.PerSecond(10), 2)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	d, open := g.TryAllowAt(t0, 2)
	fmt.Println("fast path:", d.Allowed, "open:", open)
	d = g.AllowOrCloseAt(t0, 1) // the owner is denied: it queues a waiter
	fmt.Println("owner:", d.Allowed, "retry at t0+"+d.RetryAt.Sub(t0).String())
	_, open = g.TryAllowAt(t0.Add(time.Second), 1)
	fmt.Println("fast path while the owner has a waiter, open:", open)
	d = g.AllowAt(d.RetryAt, 1) // the owner serves its waiter at its RetryAt
	g.OpenGate()
	fmt.Println("owner:", d.Allowed)
	d, open = g.TryAllowAt(t0.Add(time.Second), 1)
	fmt.Println("fast path:", d.Allowed, "open:", open)
	// Output:
	// fast path: true open: true
	// owner: false retry at t0+100ms
	// fast path while the owner has a waiter, open: false
	// owner: true
	// fast path: true open: true
}

// A token bucket of 5 refilled at 1 per second: 5 at once, then one per
// second; Remaining and ResetAt tell a client what to expect.
func ExampleTokenBucket() {
	b, _ := algorithms.NewTokenBucket(algorithms.PerSecond(1), 5)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	d := b.AllowAt(t0, 5)
	fmt.Println("5 at t0:", d.Allowed, "remaining", d.Remaining, "full again at t0+"+d.ResetAt.Sub(t0).String())
	d = b.AllowAt(t0.Add(500*time.Millisecond), 1)
	fmt.Println("1 at t0+500ms:", d.Allowed, "retry at t0+"+d.RetryAt.Sub(t0).String())
	d = b.AllowAt(t0.Add(2500*time.Millisecond), 2)
	fmt.Println("2 at t0+2.5s:", d.Allowed, "remaining", d.Remaining)
	// Output:
	// 5 at t0: true remaining 0 full again at t0+5s
	// 1 at t0+500ms: false retry at t0+1s
	// 2 at t0+2.5s: true remaining 0
}

// A leaky bucket of 4 draining at 2 per second admits what a token bucket
// would, and reports when it will be empty.
func ExampleLeakyBucket() {
	b, _ := algorithms.NewLeakyBucket(algorithms.PerSecond(2), 4)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	d := b.AllowAt(t0, 3)
	fmt.Println("3 at t0:", d.Allowed, "room for", d.Remaining, "empty at t0+"+d.ResetAt.Sub(t0).String())
	d = b.AllowAt(t0, 2)
	fmt.Println("2 more at t0:", d.Allowed, "retry at t0+"+d.RetryAt.Sub(t0).String())
	// Output:
	// 3 at t0: true room for 1 empty at t0+1.5s
	// 2 more at t0: false retry at t0+500ms
}

// The sliding window is exact: a request stops counting exactly one window
// after it was admitted.
func ExampleSlidingWindow() {
	w, _ := algorithms.NewSlidingWindow(algorithms.PerMinute(3))
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w.AllowAt(t0, 1)
	w.AllowAt(t0.Add(20*time.Second), 2)
	d := w.AllowAt(t0.Add(30*time.Second), 1)
	fmt.Println("at t0+30s:", d.Allowed, "retry at t0+"+d.RetryAt.Sub(t0).String())
	fmt.Println("at t0+1m-1ns:", w.AllowAt(t0.Add(time.Minute-1), 1).Allowed)
	fmt.Println("at t0+1m:", w.AllowAt(t0.Add(time.Minute), 1).Allowed)
	// Output:
	// at t0+30s: false retry at t0+1m0s
	// at t0+1m-1ns: false
	// at t0+1m: true
}

// The fixed window's edge: windows are aligned to the epoch, so a burst at
// the end of one and another at the start of the next pass twice the limit
// within a millisecond.
func ExampleFixedWindow() {
	w, _ := algorithms.NewFixedWindow(algorithms.PerSecond(10))
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	count := func(at time.Time) (n int) {
		for w.AllowAt(at, 1).Allowed {
			n++
		}
		return n
	}
	fmt.Println("at 12:00:00.999:", count(t0.Add(999*time.Millisecond)))
	fmt.Println("at 12:00:01.000:", count(t0.Add(time.Second)))
	d := w.AllowAt(t0.Add(time.Second), 1)
	fmt.Println("next window at", d.RetryAt.UTC().Format("15:04:05.000"))
	// Output:
	// at 12:00:00.999: 10
	// at 12:00:01.000: 10
	// next window at 12:00:02.000
}
