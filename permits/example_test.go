package permits_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/permits"
)

// peak keeps the largest value it has seen.
type peak struct{ now, max atomic.Int64 }

func (p *peak) enter() {
	n := p.now.Add(1)
	for old := p.max.Load(); n > old && !p.max.CompareAndSwap(old, n); old = p.max.Load() {
	}
}
func (p *peak) leave() { p.now.Add(-1) }

// A conc pool fans out with 16 goroutines; the calls they make are limited
// by a request rate and, separately, by a pool of 4 connections. The
// goroutine count is how much work is in progress; the permits are what
// the downstream sees.
func Example_conc() {
	requests, _ := algorithms.NewGCRA(algorithms.PerSecond(1000), 5)
	rate := actor.MustNew(requests)
	defer rate.Close()
	conns, _ := actor.NewPool(4)
	defer conns.Close()
	lim := permits.All(rate, conns)

	var inFlight peak
	call := permits.Wrap(lim, 1, func(ctx context.Context) (int, error) {
		inFlight.enter()
		defer inFlight.leave()
		time.Sleep(200 * time.Microsecond)
		return 1, nil
	})
	p := pool.NewWithResults[int]().WithContext(context.Background()).WithMaxGoroutines(16)
	for range 50 {
		p.Go(call)
	}
	results, err := p.Wait()
	fmt.Println(len(results), "calls, error:", err)
	fmt.Println("at most 4 in flight:", inFlight.max.Load() <= 4)
	fmt.Println("rate grants:", rate.Stats().Granted)
	// Output:
	// 50 calls, error: <nil>
	// at most 4 in flight: true
	// rate grants: 50
}

// All takes what every limiter grants, or nothing: here the tokens
// refuse, and the request slot and the connection it took first are given
// back.
func ExampleAll() {
	requests, _ := algorithms.NewGCRA(algorithms.PerSecond(10), 1)
	tokens, _ := algorithms.NewGCRA(algorithms.PerMinute(60000), 1000)
	reqs, toks := actor.MustNew(requests), actor.MustNew(tokens)
	defer reqs.Close()
	defer toks.Close()
	conns, _ := actor.NewPool(2)
	defer conns.Close()
	lim := permits.All(permits.FixedCost(reqs, 1), toks, permits.FixedCost(conns, 1))

	p, err := lim.Acquire(context.Background(), 800) // 1 request, 800 tokens, 1 connection
	fmt.Println("granted:", err == nil, "cost", p.Cost())
	p.Release() // gives the connection back

	// 800 more tokens would take 600ms; the deadline is 100ms: refused at
	// once, and the request slot taken before the tokens is refunded.
	time.Sleep(100 * time.Millisecond) // the next request slot is free
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = lim.Acquire(ctx, 800)
	fmt.Println("refused:", errors.Is(err, context.DeadlineExceeded))
	_, err = reqs.TryAcquire(1)
	fmt.Println("request slot given back:", err == nil, "connections held:", conns.Stats().InFlight)
	// Output:
	// granted: true cost 800
	// refused: true
	// request slot given back: true connections held: 0
}

func ExampleDo() {
	conns, _ := actor.NewPool(1)
	defer conns.Close()
	err := permits.Do(context.Background(), conns, 1, func(ctx context.Context) error {
		fmt.Println("holding", conns.Stats().InFlight, "connection")
		return nil
	})
	fmt.Println(err, "- held afterwards:", conns.Stats().InFlight)
	// Output:
	// holding 1 connection
	// <nil> - held afterwards: 0
}

func ExampleWrap() {
	// In tests, permits.Unlimited stands in for the real limiter.
	fetch := permits.Wrap(permits.Unlimited, 1, func(ctx context.Context) (string, error) {
		return "ok", nil
	})
	s, err := fetch(context.Background())
	fmt.Println(s, err)
	// Output: ok <nil>
}

// ForKey turns one key of a keyed limit into a Limiter, for Do, Wrap and All.
func ExampleForKey() {
	perUser := userLimits{}
	lim := permits.ForKey[string](perUser, "alice")
	err := permits.Do(context.Background(), lim, 1, func(context.Context) error { return nil })
	fmt.Println(err, perUser["alice"])
	// Output: <nil> 1
}

// userLimits counts the units each key asked for; it never refuses.
type userLimits map[string]int64

func (u userLimits) Acquire(ctx context.Context, key string, cost int64) (permits.Permit, error) {
	return u.TryAcquire(key, cost)
}

func (u userLimits) TryAcquire(key string, cost int64) (permits.Permit, error) {
	u[key] += cost
	return permits.Unlimited.TryAcquire(cost)
}
