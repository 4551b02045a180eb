package actor_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/permits"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type rdAlg struct {
	name string
	make func() (algorithms.Algorithm, error)
}

func rdAlgs() []rdAlg {
	r := algorithms.PerSecond(10)
	wide := algorithms.Rate{Count: 1 << 40, Per: time.Second}
	return []rdAlg{
		{"GCRA", func() (algorithms.Algorithm, error) { return algorithms.NewGCRA(r, 5) }},
		{"GCRAwide", func() (algorithms.Algorithm, error) { return algorithms.NewGCRA(wide, 5) }},
		{"TokenBucket", func() (algorithms.Algorithm, error) { return algorithms.NewTokenBucket(r, 5) }},
		{"LeakyBucket", func() (algorithms.Algorithm, error) { return algorithms.NewLeakyBucket(r, 5) }},
		{"SlidingWindow", func() (algorithms.Algorithm, error) { return algorithms.NewSlidingWindow(algorithms.PerSecond(5)) }},
		{"FixedWindow", func() (algorithms.Algorithm, error) { return algorithms.NewFixedWindow(algorithms.PerSecond(5)) }},
	}
}

var rdBadCosts = []int64{0, -1, math.MinInt64}
var rdHugeCosts = []int64{6, 1 << 40, math.MaxInt64}

// TestHostileLimiterHostileCosts: invalid and oversized costs fail at once
// with the documented sentinels, on every entry point.
func TestHostileLimiterHostileCosts(t *testing.T) {
	for _, a := range rdAlgs() {
		alg, err := a.make()
		if err != nil {
			t.Fatal(err)
		}
		l := actor.MustNew(alg, nil, actor.WithMaxQueue(math.MinInt), actor.WithMaxWait(math.MinInt64), actor.WithClock(nil))
		ln, err := l.Lane("t", 1)
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, cost int64, err error, want error) {
			t.Helper()
			if !errors.Is(err, want) {
				t.Errorf("%s %s(%d): err = %v, want %v", a.name, what, cost, err, want)
			}
		}
		for _, costs := range []struct {
			cs   []int64
			want error
		}{{rdBadCosts, permits.ErrInvalidCost}, {rdHugeCosts, permits.ErrCostExceedsCapacity}} {
			for _, c := range costs.cs {
				testutil.Within(t, 2*time.Second, a.name, func() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
					defer cancel()
					_, err := l.Acquire(ctx, c)
					check("Acquire", c, err, costs.want)
					_, err = l.AcquireGrant(ctx, c)
					check("AcquireGrant", c, err, costs.want)
					_, err = l.TryAcquire(c)
					check("TryAcquire", c, err, costs.want)
					_, err = l.TryAcquireGrant(c)
					check("TryAcquireGrant", c, err, costs.want)
					_, q, err := l.TryAcquireQuota(c)
					check("TryAcquireQuota", c, err, costs.want)
					if q.Limit != 5 {
						t.Errorf("%s TryAcquireQuota(%d) Limit = %d, want 5", a.name, c, q.Limit)
					}
					_, err = ln.Acquire(ctx, c)
					check("Lane.Acquire", c, err, costs.want)
					_, err = ln.TryAcquire(c)
					check("Lane.TryAcquire", c, err, costs.want)
					_, err = permits.All(l).Acquire(ctx, c)
					check("All.Acquire", c, err, costs.want)
				})
			}
		}
		l.Close()
	}
}

// TestHostileLimiterNoOverAdmit: TryAcquire hammered from goroutines never
// admits more than burst + rate·elapsed.
func TestHostileLimiterNoOverAdmit(t *testing.T) {
	for _, a := range rdAlgs() {
		alg, _ := a.make()
		l := actor.MustNew(alg)
		var mu sync.Mutex
		n := int64(0)
		start := time.Now()
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 2000; i++ {
					c := int64(1 + i%3)
					if _, err := l.TryAcquire(c); err == nil {
						mu.Lock()
						n += c
						mu.Unlock()
					} else if !errors.Is(err, permits.ErrRateLimited) {
						t.Errorf("%s: TryAcquire: %v", a.name, err)
						return
					} else if ra, ok := permits.RetryAfter(err); !ok || ra <= 0 {
						t.Errorf("%s: RetryAfter = %v, %v", a.name, ra, ok)
						return
					}
				}
			}()
		}
		wg.Wait()
		el := time.Since(start)
		l.Close()
		// GCRA 10/s burst 5: at most 5 + 10·el (+1 rounding); windows 5/s: at most 5·(el/1s + 2)
		max := int64(5 + 10*el.Seconds() + 1)
		if strings.Contains(a.name, "Window") {
			max = int64(5 * (el.Seconds() + 2))
		}
		if strings.Contains(a.name, "wide") {
			max = 5 + int64(float64(1<<40)*el.Seconds()) + 1
		}
		if n > max {
			t.Errorf("%s: admitted %d units in %v, bound %d", a.name, n, el, max)
		}
	}
}

// TestHostileLimiterPause: Pause with the zero time, the far past and
// the far future, then every call still answers with a sane RetryAfter and a
// deadline-bound Acquire fails fast.
func TestHostileLimiterPause(t *testing.T) {
	instants := []time.Time{
		{},
		time.Unix(0, math.MinInt64),
		time.Now().Add(-time.Hour),
		time.Now().Add(time.Duration(math.MaxInt64)),
		time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(math.MaxInt64/2, 0),
	}
	for _, a := range rdAlgs() {
		for _, until := range instants {
			name := fmt.Sprintf("%s Pause(%v)", a.name, until)
			alg, _ := a.make()
			l := actor.MustNew(alg)
			testutil.Within(t, 5*time.Second, name, func() {
				if err := l.Pause(until); err != nil {
					t.Errorf("%s: %v", name, err)
				}
				future := until.After(time.Now())
				_, err := l.TryAcquire(1)
				if future {
					if !errors.Is(err, permits.ErrRateLimited) {
						t.Errorf("%s: TryAcquire err = %v, want ErrRateLimited", name, err)
					}
					ra, ok := permits.RetryAfter(err)
					if !ok || ra <= 0 {
						t.Errorf("%s: TryAcquire RetryAfter = %v, %v; want > 0", name, ra, ok)
					}
					if ra < time.Hour {
						t.Errorf("%s: TryAcquire RetryAfter = %v; a pause years ahead must say at least an hour", name, ra)
					}
					if l.Allow() {
						t.Errorf("%s: Allow admitted during pause", name)
					}
					_, q, err := l.TryAcquireQuota(1)
					if err == nil || q.RetryAfter <= 0 || q.Reset < 0 {
						t.Errorf("%s: TryAcquireQuota = %+v, %v", name, q, err)
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					_, err = l.Acquire(ctx, 1)
					cancel()
					var rle *permits.RateLimitError
					if !errors.As(err, &rle) || !errors.Is(err, context.DeadlineExceeded) || rle.RetryAfter <= 0 {
						t.Errorf("%s: Acquire with 1s deadline = %v (%+v), want fast RateLimitError matching DeadlineExceeded", name, err, rle)
					}
					// without a deadline it waits; cancel it
					ctx, cancel = context.WithCancel(context.Background())
					go func() { time.Sleep(20 * time.Millisecond); cancel() }()
					_, err = l.Acquire(ctx, 1)
					if !errors.Is(err, context.Canceled) {
						t.Errorf("%s: cancelled Acquire = %v", name, err)
					}
				} else if err != nil {
					t.Errorf("%s: TryAcquire after past pause: %v", name, err)
				}
			})
			l.Close()
		}
	}
}

// TestHostileLimiterTune: SetRate and SetBurst with hostile values.
func TestHostileLimiterTune(t *testing.T) {
	rates := []algorithms.Rate{
		{}, {Count: -1, Per: time.Second}, {Count: 1, Per: -1}, {Count: math.MinInt64, Per: math.MinInt64},
		{Count: 1, Per: 1}, {Count: math.MaxInt64, Per: math.MaxInt64}, {Count: math.MaxInt64, Per: 1},
		{Count: 1, Per: math.MaxInt64},
	}
	bursts := []int64{0, -1, math.MinInt64, math.MaxInt64, 1 << 62, 1}
	for _, a := range rdAlgs() {
		alg, _ := a.make()
		l := actor.MustNew(alg)
		isWindow := strings.Contains(a.name, "Window")
		// a waiter queued while we retune
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := 0; i < 6; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); l.Acquire(ctx, 1) }()
		}
		testutil.Within(t, 10*time.Second, a.name+" tune", func() {
			for _, r := range rates {
				err := l.SetRate(r)
				if r.Validate() != nil {
					if !errors.Is(err, permits.ErrInvalidConfig) {
						t.Errorf("%s: SetRate(%+v) = %v, want ErrInvalidConfig", a.name, r, err)
					}
				} else if err != nil && !errors.Is(err, permits.ErrInvalidConfig) {
					t.Errorf("%s: SetRate(%+v) = %v", a.name, r, err)
				}
				_, _ = l.TryAcquire(1)
			}
			for _, b := range bursts {
				err := l.SetBurst(b)
				switch {
				case isWindow:
					if !errors.Is(err, actor.ErrNotTunable) {
						t.Errorf("%s: SetBurst(%d) = %v, want ErrNotTunable", a.name, b, err)
					}
				case b < 1:
					if !errors.Is(err, permits.ErrInvalidConfig) {
						t.Errorf("%s: SetBurst(%d) = %v, want ErrInvalidConfig", a.name, b, err)
					}
				default:
					if err != nil && !errors.Is(err, permits.ErrInvalidConfig) {
						t.Errorf("%s: SetBurst(%d) = %v", a.name, b, err)
					}
				}
				_, _ = l.TryAcquire(1)
			}
			_ = l.SetRate(algorithms.PerSecond(1000))
		})
		cancel()
		wg.Wait()
		l.Close()
	}
}

// TestHostileLimiterSettleRefund: Settle/Refund with hostile grants
// and actual costs.
func TestHostileLimiterSettleRefund(t *testing.T) {
	for _, a := range rdAlgs() {
		alg, _ := a.make()
		l := actor.MustNew(alg)
		testutil.Within(t, 5*time.Second, a.name+" settle", func() {
			if l.Refund(permits.Grant{}) {
				t.Errorf("%s: Refund(zero Grant) = true", a.name)
			}
			if err := l.Settle(permits.Grant{}, 1); !errors.Is(err, permits.ErrUnknownGrant) {
				t.Errorf("%s: Settle(zero Grant) = %v, want ErrUnknownGrant", a.name, err)
			}
			g, err := l.TryAcquireGrant(1)
			if err != nil {
				t.Fatal(err)
			}
			for _, actual := range []int64{-1, math.MinInt64} {
				if err := l.Settle(g, actual); !errors.Is(err, permits.ErrInvalidCost) {
					t.Errorf("%s: Settle(g, %d) = %v, want ErrInvalidCost", a.name, actual, err)
				}
			}
			// a grant forged from another issuer
			forged := permits.NewGrant(g.Permit, g.At, false, l, time.Unix(1<<62, 0), math.MaxInt64, math.MaxInt64)
			_ = l.Refund(forged)
			_ = l.Settle(forged, 0)
			if err := l.Settle(g, math.MaxInt64); err != nil && !errors.Is(err, permits.ErrUnknownGrant) {
				t.Errorf("%s: Settle(g, MaxInt64) = %v", a.name, err)
			}
			if err := l.Settle(g, 1); !errors.Is(err, permits.ErrUnknownGrant) {
				t.Errorf("%s: second Settle = %v, want ErrUnknownGrant", a.name, err)
			}
			if l.Refund(g) {
				t.Errorf("%s: Refund after Settle gave something back", a.name)
			}
			// after a debt of MaxInt64 the limiter still answers sanely.
			_, err = l.TryAcquire(1)
			if err != nil {
				if !errors.Is(err, permits.ErrRateLimited) {
					t.Errorf("%s: TryAcquire after huge debt = %v", a.name, err)
				}
				if ra, ok := permits.RetryAfter(err); !ok || ra <= 0 {
					t.Errorf("%s: TryAcquire after huge debt RetryAfter = %v %v", a.name, ra, ok)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err = l.Acquire(ctx, 1)
			cancel()
			if err != nil && !errors.Is(err, permits.ErrRateLimited) {
				t.Errorf("%s: Acquire after huge debt = %v", a.name, err)
			}
			_, q, _ := l.TryAcquireQuota(1)
			if q.Reset < 0 || q.RetryAfter < 0 {
				t.Errorf("%s: Quota after huge debt = %+v", a.name, q)
			}
		})
		l.Close()
	}
}

// TestHostileLane: Lane names, weights, priorities and the priority
// floor.
func TestHostileLane(t *testing.T) {
	alg, _ := algorithms.NewGCRA(algorithms.PerSecond(10), 5)
	l := actor.MustNew(alg)
	defer l.Close()
	bad := []struct {
		name   string
		weight int
		opts   []actor.LaneOption
	}{
		{"", 1, nil},
		{strings.Repeat("x", actor.MaxLaneName+1), 1, nil},
		{"\xff", 1, nil},
		{"a\x00", 1, nil},
		{"a\nb", 1, nil},
		{"a\u0085", 1, nil},
		{"w0", 0, nil},
		{"w-1", -1, nil},
		{"wmin", math.MinInt, nil},
		{"wmax", math.MaxInt, nil},
		{"wbig", actor.MaxLaneWeight + 1, nil},
		{"p-1", 1, []actor.LaneOption{actor.WithPriority(-1)}},
		{"pbig", 1, []actor.LaneOption{actor.WithPriority(actor.MaxPriority + 1)}},
		{"pmin", 1, []actor.LaneOption{actor.WithPriority(math.MinInt)}},
		{"pmax", 1, []actor.LaneOption{actor.WithPriority(math.MaxInt)}},
	}
	testutil.Within(t, 5*time.Second, "lanes", func() {
		for _, b := range bad {
			_, err := l.Lane(b.name, b.weight, b.opts...)
			if !errors.Is(err, permits.ErrInvalidConfig) {
				t.Errorf("Lane(%q, %d, %v) = %v, want ErrInvalidConfig", b.name, b.weight, b.opts, err)
			}
		}
		if _, err := l.Lane(strings.Repeat("x", actor.MaxLaneName), actor.MaxLaneWeight, nil, actor.WithPriority(actor.MaxPriority)); err != nil {
			t.Errorf("Lane at the limits: %v", err)
		}
		if _, err := l.Lane("a", 1); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Lane("a", 2); !errors.Is(err, actor.ErrLaneExists) {
			t.Errorf("Lane(a,2) = %v, want ErrLaneExists", err)
		}
		for _, s := range []float64{-1, -1e-300, 0.5000001, 1, math.NaN(), math.Inf(1), math.Inf(-1)} {
			if err := l.SetPriorityFloor(s); !errors.Is(err, permits.ErrInvalidConfig) {
				t.Errorf("SetPriorityFloor(%v) = %v, want ErrInvalidConfig", s, err)
			}
		}
		for _, s := range []float64{0, math.Copysign(0, -1), 1e-300, 0.5} {
			if err := l.SetPriorityFloor(s); err != nil {
				t.Errorf("SetPriorityFloor(%v) = %v", s, err)
			}
		}
	})
}

// TestHostileLimiterClosed: every method after Close, and Close twice.
func TestHostileLimiterClosed(t *testing.T) {
	for _, a := range rdAlgs() {
		alg, _ := a.make()
		l := actor.MustNew(alg)
		ln, err := l.Lane("x", 1)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := l.TryAcquireGrant(1)
		// a waiter when we close
		waitErr := make(chan error, 1)
		go func() {
			_, err := l.Acquire(context.Background(), 5)
			_, err2 := l.Acquire(context.Background(), 5)
			if err == nil {
				err = err2
			}
			waitErr <- err
		}()
		for l.Stats().Waiting == 0 && a.name != "GCRAwide" {
			runtime.Gosched() // until the waiter has sent: Close then fails it, not a later call
		}
		testutil.Within(t, 5*time.Second, a.name+" close", func() {
			if err := l.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
			if err := l.Close(); err != nil {
				t.Errorf("second Close = %v", err)
			}
			if err := <-waitErr; !errors.Is(err, permits.ErrClosed) && !(a.name == "GCRAwide" && err == nil) {
				t.Errorf("%s: waiter at Close = %v, want ErrClosed", a.name, err)
			}
			is := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, permits.ErrClosed) {
					t.Errorf("%s: %s after Close = %v, want ErrClosed", a.name, what, err)
				}
			}
			_, err := l.Acquire(context.Background(), 1)
			is("Acquire", err)
			_, err = l.AcquireGrant(context.Background(), 1)
			is("AcquireGrant", err)
			_, err = l.TryAcquire(1)
			is("TryAcquire", err)
			_, err = l.TryAcquireGrant(1)
			is("TryAcquireGrant", err)
			_, _, err = l.TryAcquireQuota(1)
			is("TryAcquireQuota", err)
			is("Wait", l.Wait(context.Background()))
			is("Pause", l.Pause(time.Now().Add(time.Hour)))
			is("Pause(zero)", l.Pause(time.Time{}))
			is("SetRate", l.SetRate(algorithms.PerSecond(1)))
			if !strings.Contains(a.name, "Window") {
				is("SetBurst", l.SetBurst(2))
			}
			is("SetPriorityFloor", l.SetPriorityFloor(0.1))
			is("Settle", l.Settle(g, 1))
			if l.Refund(g) {
				t.Errorf("%s: Refund after Close = true", a.name)
			}
			if l.Allow() {
				t.Errorf("%s: Allow after Close = true", a.name)
			}
			_, err = l.Lane("y", 1)
			is("Lane", err)
			_, err = ln.Acquire(context.Background(), 1)
			is("Lane.Acquire", err)
			_, err = ln.TryAcquire(1)
			is("Lane.TryAcquire", err)
			if ln.Allow() {
				t.Errorf("%s: Lane.Allow after Close", a.name)
			}
			_ = l.Stats()
		})
	}
}

// TestHostileLimiterContexts: done contexts, far deadlines, deadline exactly now.
func TestHostileLimiterContexts(t *testing.T) {
	alg, _ := algorithms.NewGCRA(algorithms.PerSecond(1), 1)
	l := actor.MustNew(alg)
	defer l.Close()
	testutil.Within(t, 5*time.Second, "contexts", func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := l.Acquire(ctx, 1); !errors.Is(err, context.Canceled) {
			t.Errorf("Acquire(cancelled) = %v", err)
		}
		past, c2 := context.WithDeadline(context.Background(), time.Time{})
		defer c2()
		if _, err := l.Acquire(past, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Acquire(deadline zero time) = %v", err)
		}
		far, c3 := context.WithDeadline(context.Background(), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
		defer c3()
		if _, err := l.Acquire(far, 1); err != nil {
			t.Errorf("Acquire(far deadline) = %v", err)
		}
		// now empty: next at ~1s. A deadline in 10ms must fail fast.
		short, c4 := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer c4()
		_, err := l.Acquire(short, 1)
		if !errors.Is(err, permits.ErrRateLimited) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Acquire(10ms deadline) = %v", err)
		}
		if ra, ok := permits.RetryAfter(err); !ok || ra <= 0 || ra > time.Second {
			t.Errorf("RetryAfter = %v %v", ra, ok)
		}
	})
}

// TestHostilePool: NewPool sizes, costs, options, Close.
func TestHostilePool(t *testing.T) {
	for _, n := range []int64{0, -1, math.MinInt64, 1 << 62, math.MaxInt64} {
		p, err := actor.NewPool(n)
		if !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("NewPool(%d) = %v", n, err)
		}
		if p != nil {
			t.Errorf("NewPool(%d) returned a pool with an error", n)
			p.Close()
		}
	}
	p, err := actor.NewPool(1<<62-1, nil, actor.WithPoolMaxQueue(math.MinInt), actor.WithPoolName(""))
	if err != nil {
		t.Fatalf("NewPool(2^62-1) = %v", err)
	}
	testutil.Within(t, 5*time.Second, "pool big", func() {
		pm, err := p.TryAcquire(1<<62 - 1)
		if err != nil {
			t.Errorf("TryAcquire(size) = %v", err)
		}
		if _, err := p.TryAcquire(1); !errors.Is(err, permits.ErrRateLimited) {
			t.Errorf("TryAcquire over = %v", err)
		}
		pm.Release()
		pm.Release()
		if s := p.Stats(); s.InFlight != 0 {
			t.Errorf("InFlight after release = %d", s.InFlight)
		}
	})
	p.Close()

	p, _ = actor.NewPool(3, actor.WithMaxQueue(1))
	testutil.Within(t, 5*time.Second, "pool", func() {
		ctx := context.Background()
		for _, c := range rdBadCosts {
			if _, err := p.Acquire(ctx, c); !errors.Is(err, permits.ErrInvalidCost) {
				t.Errorf("Pool.Acquire(%d) = %v", c, err)
			}
			if _, err := p.TryAcquire(c); !errors.Is(err, permits.ErrInvalidCost) {
				t.Errorf("Pool.TryAcquire(%d) = %v", c, err)
			}
		}
		for _, c := range []int64{4, math.MaxInt64} {
			if _, err := p.Acquire(ctx, c); !errors.Is(err, permits.ErrCostExceedsCapacity) {
				t.Errorf("Pool.Acquire(%d) = %v", c, err)
			}
			if _, err := p.TryAcquire(c); !errors.Is(err, permits.ErrCostExceedsCapacity) {
				t.Errorf("Pool.TryAcquire(%d) = %v", c, err)
			}
		}
		held, _ := p.Acquire(ctx, 3)
		// one waiter fills the queue, the next is refused
		errs := make(chan error, 1)
		go func() { _, err := p.Acquire(ctx, 1); errs <- err }()
		for p.Stats().Waiting == 0 {
			runtime.Gosched()
		}
		if _, err := p.Acquire(ctx, 1); !errors.Is(err, permits.ErrRateLimited) {
			t.Errorf("Acquire beyond max queue = %v", err)
		}
		p.Close()
		p.Close()
		if err := <-errs; !errors.Is(err, permits.ErrClosed) {
			t.Errorf("pool waiter at Close = %v", err)
		}
		held.Release() // harmless after Close
		held.Release()
		if _, err := p.Acquire(ctx, 1); !errors.Is(err, permits.ErrClosed) {
			t.Errorf("Pool.Acquire after Close = %v", err)
		}
		if _, err := p.TryAcquire(1); !errors.Is(err, permits.ErrClosed) {
			t.Errorf("Pool.TryAcquire after Close = %v", err)
		}
	})
}

// TestHostilePoolNoOverAdmit: concurrent acquire/release never exceed Size.
func TestHostilePoolNoOverAdmit(t *testing.T) {
	p, _ := actor.NewPool(5)
	defer p.Close()
	var mu sync.Mutex
	held, maxHeld := int64(0), int64(0)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				c := int64(1 + (g+i)%5)
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%3)*time.Millisecond)
				pm, err := p.Acquire(ctx, c)
				cancel()
				if err != nil {
					continue
				}
				mu.Lock()
				held += c
				maxHeld = max(maxHeld, held)
				mu.Unlock()
				mu.Lock()
				held -= c
				mu.Unlock()
				pm.Release()
				pm.Release()
			}
		}(g)
	}
	wg.Wait()
	if maxHeld > 5 {
		t.Errorf("pool of 5 held %d at once", maxHeld)
	}
	if s := p.Stats(); s.InFlight != 0 || s.Waiting != 0 {
		t.Errorf("stats after all released: %+v", s)
	}
}

// TestHostileMaxWaitTinyGrantsFree: WithMaxWait(1ns) must still grant a
// permit that is free now (the prediction is 0).
func TestHostileMaxWaitTinyGrantsFree(t *testing.T) {
	for _, a := range rdAlgs() {
		alg, _ := a.make()
		l := actor.MustNew(alg, actor.WithMaxWait(1))
		if _, err := l.Acquire(context.Background(), 1); err != nil {
			t.Errorf("%s: WithMaxWait(1ns) Acquire with free capacity = %v", a.name, err)
		}
		l.Close()
	}
}

// New refuses a nil algorithm with the one configuration error, starting
// nothing; MustNew panics with that error instead.
func TestNewRefusesANilAlgorithm(t *testing.T) {
	l, err := actor.New(nil)
	require.ErrorIs(t, err, permits.ErrInvalidConfig)
	assert.Nil(t, l)
	assert.PanicsWithError(t, err.Error(), func() { actor.MustNew(nil) })
}
