package permits_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/permits"
)

func rdRate(t *testing.T, r algorithms.Rate, burst int64) *actor.Limiter {
	t.Helper()
	g, err := algorithms.NewGCRA(r, burst)
	if err != nil {
		t.Fatal(err)
	}
	l := actor.MustNew(g)
	t.Cleanup(func() { l.Close() })
	return l
}

func rdPool(t *testing.T, n int64) *actor.Pool {
	t.Helper()
	p, err := actor.NewPool(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestHostileErrors: the error constructors and RetryAfter at the edges.
func TestHostileErrors(t *testing.T) {
	for _, d := range []time.Duration{math.MinInt64, -1, 0, 1, math.MaxInt64} {
		err := permits.RetryLater(d)
		if !errors.Is(err, permits.ErrRateLimited) {
			t.Errorf("RetryLater(%v) does not match ErrRateLimited", d)
		}
		ra, ok := permits.RetryAfter(err)
		want := max(d, 1)
		if !ok || ra != want {
			t.Errorf("RetryAfter(RetryLater(%v)) = %v, %v; want %v", d, ra, ok, want)
		}
		var rle *permits.RateLimitError
		if !errors.As(err, &rle) || rle.RetryAfter != want {
			t.Errorf("As(RetryLater(%v)) = %+v", d, rle)
		}
		wrapped := fmt.Errorf("outer: %w", err)
		if ra, ok := permits.RetryAfter(wrapped); !ok || ra != want {
			t.Errorf("RetryAfter(wrapped RetryLater(%v)) = %v, %v", d, ra, ok)
		}
		_ = err.Error()
	}
	if ra, ok := permits.RetryAfter(nil); ok || ra != 0 {
		t.Errorf("RetryAfter(nil) = %v, %v", ra, ok)
	}
	for _, c := range []int64{math.MinInt64, -1, 0} {
		if !errors.Is(permits.InvalidCost(c), permits.ErrInvalidCost) {
			t.Errorf("InvalidCost(%d)", c)
		}
	}
	if !errors.Is(permits.CostExceedsCapacity(math.MaxInt64, math.MinInt64), permits.ErrCostExceedsCapacity) {
		t.Error("CostExceedsCapacity")
	}
	e := &permits.RateLimitError{RetryAfter: time.Second, Cause: context.DeadlineExceeded}
	if !errors.Is(e, permits.ErrRateLimited) || !errors.Is(e, context.DeadlineExceeded) {
		t.Error("RateLimitError matching")
	}
	_ = (&permits.RateLimitError{}).Error()
}

// TestHostileUnlimited
func TestHostileUnlimited(t *testing.T) {
	u := permits.Unlimited
	for _, c := range []int64{0, -1, math.MinInt64} {
		if _, err := u.Acquire(context.Background(), c); !errors.Is(err, permits.ErrInvalidCost) {
			t.Errorf("Unlimited.Acquire(%d) = %v", c, err)
		}
		if _, err := u.TryAcquire(c); !errors.Is(err, permits.ErrInvalidCost) {
			t.Errorf("Unlimited.TryAcquire(%d) = %v", c, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := u.Acquire(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Unlimited.Acquire(done) = %v", err)
	}
	if p, err := u.Acquire(context.Background(), math.MaxInt64); err != nil || p.Cost() != math.MaxInt64 {
		t.Errorf("Unlimited.Acquire(MaxInt64) = %v, %v", p, err)
	}
}

// TestHostilePermitZeroAndNil
func TestHostilePermitZeroAndNil(t *testing.T) {
	var p permits.Permit
	p.Release()
	p.Release()
	if p.Cost() != 0 || p.Token() != nil {
		t.Error("zero permit")
	}
	q := permits.NewPermit(math.MinInt64, nil, nil)
	q.Release()
	if err := permits.Settle(p, 1); !errors.Is(err, permits.ErrUnknownGrant) {
		t.Errorf("Settle(zero) = %v", err)
	}
	if err := permits.Settle(p, -1); !errors.Is(err, permits.ErrInvalidCost) {
		t.Errorf("Settle(zero,-1) = %v", err)
	}
	var g permits.Grant
	if _, _, _, ok := g.Ticket(nil); ok {
		t.Error("zero Grant ticket ok")
	}
	permits.Each(nil, func(permits.Limiter) { t.Error("Each(nil) called fn") })
}

// TestHostileAllHostileCosts: All gives back every part on refusal, for
// every hostile cost, and the pool ends holding nothing.
func TestHostileAllHostileCosts(t *testing.T) {
	rate := rdRate(t, algorithms.PerSecond(100), 10)
	tokens := rdRate(t, algorithms.PerSecond(1000), 100)
	pool := rdPool(t, 2)
	lim := permits.All(permits.FixedCost(rate, 1), tokens, permits.FixedCost(pool, 1))
	type tc struct {
		cost int64
		want error
	}
	cases := []tc{
		{0, permits.ErrInvalidCost}, {-1, permits.ErrInvalidCost}, {math.MinInt64, permits.ErrInvalidCost},
		{101, permits.ErrCostExceedsCapacity}, {math.MaxInt64, permits.ErrCostExceedsCapacity},
	}
	testutil.Within(t, 5*time.Second, "All", func() {
		for _, c := range cases {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err := lim.Acquire(ctx, c.cost)
			cancel()
			if !errors.Is(err, c.want) {
				t.Errorf("All.Acquire(%d) = %v, want %v", c.cost, err, c.want)
			}
			_, err = lim.TryAcquire(c.cost)
			if !errors.Is(err, c.want) {
				t.Errorf("All.TryAcquire(%d) = %v, want %v", c.cost, err, c.want)
			}
			if s := pool.Stats(); s.InFlight != 0 {
				t.Errorf("after All(%d) refused, pool holds %d", c.cost, s.InFlight)
			}
			if err := permits.Do(context.Background(), lim, c.cost, func(context.Context) error {
				t.Errorf("Do ran fn for cost %d", c.cost)
				return nil
			}); !errors.Is(err, c.want) {
				t.Errorf("Do(%d) = %v", c.cost, err)
			}
			f := permits.Wrap(lim, c.cost, func(context.Context) (int, error) { return 1, nil })
			if v, err := f(context.Background()); !errors.Is(err, c.want) || v != 0 {
				t.Errorf("Wrap(%d) = %v, %v", c.cost, v, err)
			}
		}
		// Full: the rate has all 10 request slots.
		p, err := lim.Acquire(context.Background(), 100)
		if err != nil {
			t.Fatal(err)
		}
		if err := permits.Settle(p, math.MaxInt64); err != nil {
			t.Logf("Settle(MaxInt64) = %v", err)
		}
		if err := permits.Settle(p, 1); !errors.Is(err, permits.ErrUnknownGrant) {
			t.Errorf("second Settle = %v", err)
		}
		p.Release()
		p.Release()
		if err := permits.Settle(p, 1); !errors.Is(err, permits.ErrUnknownGrant) {
			t.Errorf("Settle after Release = %v", err)
		}
		if s := pool.Stats(); s.InFlight != 0 {
			t.Errorf("pool holds %d after release", s.InFlight)
		}
		// After a debt of MaxInt64 tokens, Acquire with a deadline fails fast.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err = lim.Acquire(ctx, 1)
		cancel()
		if err == nil {
			t.Errorf("All.Acquire after MaxInt64 debt granted")
		} else if !errors.Is(err, permits.ErrRateLimited) && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("All.Acquire after debt = %v", err)
		}
		if s := pool.Stats(); s.InFlight != 0 {
			t.Errorf("pool holds %d after refused acquire", s.InFlight)
		}
	})
}

// TestHostileFixedCost: FixedCost with hostile n.
func TestHostileFixedCost(t *testing.T) {
	rate := rdRate(t, algorithms.PerSecond(100), 10)
	for _, n := range []int64{0, -1, math.MinInt64, math.MaxInt64, 11} {
		testutil.Within(t, 2*time.Second, fmt.Sprint("FixedCost ", n), func() {
			f := permits.FixedCost(rate, n)
			_, err := f.Acquire(context.Background(), 1)
			want := permits.ErrCostExceedsCapacity
			if n < 1 {
				want = permits.ErrInvalidCost
			}
			if !errors.Is(err, want) {
				t.Errorf("FixedCost(%d).Acquire = %v, want %v", n, err, want)
			}
			_, err = f.TryAcquire(1)
			if !errors.Is(err, want) {
				t.Errorf("FixedCost(%d).TryAcquire = %v, want %v", n, err, want)
			}
			_, err = permits.All(f).Acquire(context.Background(), 1)
			if !errors.Is(err, want) {
				t.Errorf("All(FixedCost(%d)).Acquire = %v, want %v", n, err, want)
			}
		})
	}
}

// TestHostileMaxWait: MaxWait/WithMaxWait with extreme durations.
func TestHostileMaxWait(t *testing.T) {
	for _, d := range []time.Duration{math.MinInt64, -1, 0, 1, math.MaxInt64} {
		synctest.Test(t, func(t *testing.T) { hostileMaxWait(t, d) })
	}
}

// hostileMaxWait is TestHostileMaxWait for one bound, in a bubble, so that
// "refused at once" is an exact instant rather than a guess at how long a
// refusal takes on this machine.
func hostileMaxWait(t *testing.T, d time.Duration) {
	rate := rdRate(t, algorithms.PerSecond(10), 1)
	testutil.Within(t, 5*time.Second, fmt.Sprint("MaxWait ", d), func() {
		m := permits.MaxWait(rate, d)
		if _, err := m.Acquire(context.Background(), 1); err != nil {
			t.Errorf("MaxWait(%v) first Acquire = %v", d, err)
		}
		// now the next unit is ~100ms away.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		_, err := m.Acquire(ctx, 1)
		el := time.Since(start)
		switch {
		case d <= 1:
			if !errors.Is(err, permits.ErrRateLimited) || errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("MaxWait(%v) Acquire = %v, want ErrRateLimited only", d, err)
			}
			if ra, ok := permits.RetryAfter(err); !ok || ra <= 0 {
				t.Errorf("MaxWait(%v) RetryAfter = %v %v", d, ra, ok)
			}
			if el != 0 {
				t.Errorf("MaxWait(%v) refused after %v, want at once", d, el)
			}
		default:
			if err != nil {
				t.Errorf("MaxWait(%v) Acquire = %v, want a grant after ~100ms", d, err)
			}
		}
		// Do with the same bound
		err = permits.Do(context.Background(), rate, 1, func(context.Context) error { return nil }, permits.WithMaxWait(d), nil)
		if d > 1 && err != nil {
			t.Errorf("Do WithMaxWait(%v) = %v", d, err)
		}
		if d <= 1 && err != nil && !errors.Is(err, permits.ErrRateLimited) {
			t.Errorf("Do WithMaxWait(%v) = %v", d, err)
		}
		// MaxWait of a Refunder keeps Refund/Settle
		if r, ok := m.(permits.Settler); ok {
			if r.Refund(permits.Grant{}) {
				t.Errorf("Refund(zero) true")
			}
			if err := r.Settle(permits.Grant{}, 1); !errors.Is(err, permits.ErrUnknownGrant) {
				t.Errorf("Settle(zero) = %v", err)
			}
		} else {
			t.Errorf("MaxWait(actor.Limiter) is not a Settler")
		}
	})
}

// TestHostileAllCloseParts: a closed part makes All fail with ErrClosed and
// give everything back.
func TestHostileAllCloseParts(t *testing.T) {
	rate := rdRate(t, algorithms.PerSecond(100), 10)
	g, _ := algorithms.NewGCRA(algorithms.PerSecond(100), 10)
	closed := actor.MustNew(g)
	closed.Close()
	pool := rdPool(t, 1)
	lim := permits.All(pool, rate, closed)
	testutil.Within(t, 2*time.Second, "closed part", func() {
		if _, err := lim.Acquire(context.Background(), 1); !errors.Is(err, permits.ErrClosed) {
			t.Errorf("All with closed part = %v", err)
		}
		if _, err := lim.TryAcquire(1); !errors.Is(err, permits.ErrClosed) {
			t.Errorf("All.TryAcquire with closed part = %v", err)
		}
		if s := pool.Stats(); s.InFlight != 0 {
			t.Errorf("pool holds %d", s.InFlight)
		}
		// the rate's units came back: 10 available
		n := 0
		for rate.Allow() {
			n++
		}
		if n != 10 {
			t.Errorf("rate has %d units after refused Alls, want 10", n)
		}
	})
}

// TestHostileAllNoOverAdmit: concurrent All with cancellations never holds
// more than the pool and never admits more than the rate allows.
func TestHostileAllNoOverAdmit(t *testing.T) {
	rate := rdRate(t, algorithms.PerSecond(200), 5)
	pool := rdPool(t, 3)
	lim := permits.All(rate, pool)
	var mu sync.Mutex
	held, maxHeld, granted := int64(0), int64(0), int64(0)
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%4)*3*time.Millisecond)
				p, err := lim.Acquire(ctx, 1)
				cancel()
				if err != nil {
					continue
				}
				mu.Lock()
				held++
				granted++
				maxHeld = max(maxHeld, held)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				held--
				mu.Unlock()
				p.Release()
			}
		}(g)
	}
	wg.Wait()
	el := time.Since(start)
	if maxHeld > 3 {
		t.Errorf("held %d > pool 3", maxHeld)
	}
	if bound := int64(5+200*el.Seconds()) + 1; granted > bound {
		t.Errorf("granted %d in %v > %d", granted, el, bound)
	}
	if s := pool.Stats(); s.InFlight != 0 || s.Waiting != 0 {
		t.Errorf("pool after: %+v", s)
	}
}

// TestHostileRetryAfterTypedNil: a typed-nil *RateLimitError in a chain
// (e.g. a helper that returns `var e *RateLimitError; return e`) must not
// make RetryAfter panic.
func TestHostileRetryAfterTypedNil(t *testing.T) {
	var nilRLE *permits.RateLimitError
	testutil.Within(t, time.Second, "RetryAfter(typed nil)", func() {
		_, _ = permits.RetryAfter(fmt.Errorf("wrapped: %w", nilRLE))
	})
}

// TestHostileMaxWaitTinyBoundGrantsFreeCapacity: a positive wait bound is
// meant to be at least as permissive as d <= 0 (a TryAcquire): a permit that
// is free now needs no wait at all. MaxWait(lim, 1ns) refuses every free
// permit, and bounds of 1-10µs refuse some, with "retry after 1ns".
func TestHostileMaxWaitTinyBoundGrantsFreeCapacity(t *testing.T) {
	rate := rdRate(t, algorithms.PerSecond(1e9), 1e6)
	for _, d := range []time.Duration{1, time.Microsecond} {
		m := permits.MaxWait(rate, d)
		refused := 0
		var last error
		for i := 0; i < 2000; i++ {
			if _, err := m.Acquire(context.Background(), 1); err != nil {
				refused++
				last = err
			}
		}
		if refused > 0 {
			t.Errorf("MaxWait(%v): %d of 2000 Acquires refused with free capacity (TryAcquire would grant): %v", d, refused, last)
		}
		err := permits.Do(context.Background(), rate, 1, func(context.Context) error { return nil }, permits.WithMaxWait(d))
		if err != nil {
			t.Errorf("Do WithMaxWait(%v) with free capacity = %v", d, err)
		}
	}
}
