package keyed_test

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

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

func rdCtors() map[string]func(string) (algorithms.Algorithm, error) {
	r := algorithms.PerSecond(10)
	return map[string]func(string) (algorithms.Algorithm, error){
		"GCRA": func(string) (algorithms.Algorithm, error) { return algorithms.NewGCRA(r, 5) },
		"GCRAwide": func(string) (algorithms.Algorithm, error) {
			return algorithms.NewGCRA(algorithms.Rate{Count: 1 << 40, Per: time.Second}, 5)
		},
		"Token": func(string) (algorithms.Algorithm, error) { return algorithms.NewTokenBucket(r, 5) },
		"Sliding": func(string) (algorithms.Algorithm, error) {
			return algorithms.NewSlidingWindow(algorithms.PerSecond(5))
		},
		"Fixed": func(string) (algorithms.Algorithm, error) { return algorithms.NewFixedWindow(algorithms.PerSecond(5)) },
		"Mixed": func(k string) (algorithms.Algorithm, error) {
			if len(k)%2 == 0 {
				return algorithms.NewGCRA(r, 5)
			}
			return algorithms.NewLeakyBucket(algorithms.PerSecond(20), 5)
		},
	}
}

// TestHostileNew: New with nil constructor and hostile options.
func TestHostileNew(t *testing.T) {
	ctor := rdCtors()["GCRA"]
	if l, err := keyed.New[string](nil); !errors.Is(err, permits.ErrInvalidConfig) || l != nil {
		t.Errorf("New(nil) = %v, %v", l, err)
	}
	bad := []keyed.Option{
		keyed.WithShards(-1), keyed.WithShards(math.MinInt), keyed.WithShards(4097), keyed.WithShards(math.MaxInt),
		keyed.WithMaxKeys(-1), keyed.WithMaxKeys(math.MinInt),
		keyed.WithIdleTimeout(-1), keyed.WithIdleTimeout(math.MinInt64),
	}
	for i, o := range bad {
		l, err := keyed.New(ctor, o)
		if !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("bad option %d: err = %v", i, err)
		}
		if l != nil {
			l.Close()
		}
	}
	good := [][]keyed.Option{
		{nil},
		{keyed.WithShards(0), keyed.WithShards(4096)},
		{keyed.WithShards(3)},
		{keyed.WithMaxQueue(math.MinInt), keyed.WithMaxWait(math.MinInt64)},
		{keyed.WithMaxQueue(math.MaxInt), keyed.WithMaxWait(math.MaxInt64)},
		{keyed.WithIdleTimeout(math.MaxInt64), keyed.WithMaxKeys(math.MaxInt)},
		{keyed.WithClock(nil), keyed.WithName("")},
	}
	for i, opts := range good {
		var l *keyed.Limiter[string]
		var err error
		testutil.Within(t, 5*time.Second, fmt.Sprint("good ", i), func() {
			l, err = keyed.New(ctor, opts...)
			if err != nil {
				t.Errorf("good options %d: %v", i, err)
				return
			}
			if _, err := l.TryAcquire("k", 1); err != nil {
				t.Errorf("good options %d: TryAcquire: %v", i, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if _, err := l.Acquire(ctx, "k", 5); err != nil && !errors.Is(err, permits.ErrRateLimited) {
				t.Errorf("good options %d: Acquire: %v", i, err)
			}
			cancel()
			l.Close()
		})
	}
}

// TestHostileConstructor: constructors that fail, return nil, or a
// typed nil must give an *AlgorithmError, not panic or hang.
func TestHostileConstructor(t *testing.T) {
	boom := errors.New("boom")
	ctors := map[string]func(string) (algorithms.Algorithm, error){
		"error": func(string) (algorithms.Algorithm, error) { return nil, boom },
		"nil":   func(string) (algorithms.Algorithm, error) { return nil, nil },
		"typed nil": func(string) (algorithms.Algorithm, error) {
			var g *algorithms.GCRA
			return g, nil
		},
		"bad rate": func(string) (algorithms.Algorithm, error) { return algorithms.NewGCRA(algorithms.Rate{}, 1) },
	}
	for name, c := range ctors {
		l, err := keyed.New(c)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Within(t, 5*time.Second, name, func() {
			var ae *keyed.AlgorithmError
			_, err := l.TryAcquire("k", 1)
			if !errors.As(err, &ae) {
				t.Errorf("%s: TryAcquire = %v, want *AlgorithmError", name, err)
			}
			if name == "error" && !errors.Is(err, boom) {
				t.Errorf("%s: TryAcquire = %v, want to match boom", name, err)
			}
			_, err = l.Acquire(context.Background(), "k", 1)
			if !errors.As(err, &ae) {
				t.Errorf("%s: Acquire = %v, want *AlgorithmError", name, err)
			}
			_, _, err = l.TryAcquireQuota("k", 1)
			if !errors.As(err, &ae) {
				t.Errorf("%s: TryAcquireQuota = %v, want *AlgorithmError", name, err)
			}
			_, _, err = l.AcquireQuota(context.Background(), "k", 1)
			if !errors.As(err, &ae) {
				t.Errorf("%s: AcquireQuota = %v, want *AlgorithmError", name, err)
			}
			if err := l.SetRate("k", algorithms.PerSecond(1)); !errors.As(err, &ae) {
				t.Errorf("%s: SetRate = %v, want *AlgorithmError", name, err)
			}
			if err := l.SetBurst("k", 2); !errors.As(err, &ae) {
				t.Errorf("%s: SetBurst = %v, want *AlgorithmError", name, err)
			}
			if s := l.Stats(); s.Keys != 0 {
				t.Errorf("%s: %d keys live after failures", name, s.Keys)
			}
		})
		l.Close()
	}
}

// TestHostileHostileCostsAndKeys
func TestHostileHostileCostsAndKeys(t *testing.T) {
	keys := []string{"", "a", strings.Repeat("k", 1<<20), "\x00\xff", "b"}
	for name, c := range rdCtors() {
		l, err := keyed.New(c, keyed.WithShards(2))
		if err != nil {
			t.Fatal(err)
		}
		testutil.Within(t, 10*time.Second, name, func() {
			for _, k := range keys {
				for _, cc := range []struct {
					costs []int64
					want  error
				}{{[]int64{0, -1, math.MinInt64}, permits.ErrInvalidCost}, {[]int64{6, 1 << 40, math.MaxInt64}, permits.ErrCostExceedsCapacity}} {
					for _, cost := range cc.costs {
						ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
						_, err := l.Acquire(ctx, k, cost)
						cancel()
						if !errors.Is(err, cc.want) {
							t.Errorf("%s: Acquire(%.10q, %d) = %v, want %v", name, k, cost, err, cc.want)
						}
						_, err = l.TryAcquire(k, cost)
						if !errors.Is(err, cc.want) {
							t.Errorf("%s: TryAcquire(%.10q, %d) = %v, want %v", name, k, cost, err, cc.want)
						}
						_, q, err := l.TryAcquireQuota(k, cost)
						if !errors.Is(err, cc.want) {
							t.Errorf("%s: TryAcquireQuota(%.10q, %d) = %v, want %v", name, k, cost, err, cc.want)
						}
						if q.Remaining < -1 || q.Reset < 0 || q.RetryAfter < 0 {
							t.Errorf("%s: quota %+v", name, q)
						}
						_, _, err = l.AcquireQuota(context.Background(), k, cost)
						if !errors.Is(err, cc.want) {
							t.Errorf("%s: AcquireQuota(%.10q, %d) = %v, want %v", name, k, cost, err, cc.want)
						}
					}
				}
				// A real cost works for every key, and the 6th unit is refused.
				got := int64(0)
				for i := 0; i < 8; i++ {
					if _, err := l.TryAcquire(k, 1); err == nil {
						got++
					} else if ra, ok := permits.RetryAfter(err); !errors.Is(err, permits.ErrRateLimited) || !ok || ra <= 0 {
						t.Errorf("%s: refusal %v (ra %v %v)", name, err, ra, ok)
					}
				}
				if name != "GCRAwide" && got > 5 {
					t.Errorf("%s: key %.10q admitted %d of burst 5", name, k, got)
				}
			}
		})
		l.Close()
	}
}

// TestHostileTune: SetRate/SetBurst per key.
func TestHostileTune(t *testing.T) {
	rates := []algorithms.Rate{{}, {Count: -1, Per: 1}, {Count: 1, Per: -1}, {Count: math.MaxInt64, Per: math.MaxInt64},
		{Count: 1, Per: 1}, {Count: math.MaxInt64, Per: 1}, {Count: math.MinInt64, Per: math.MinInt64}}
	bursts := []int64{0, -1, math.MinInt64, 1 << 62, math.MaxInt64, 3}
	for name, c := range rdCtors() {
		l, _ := keyed.New(c, keyed.WithShards(1))
		window := name == "Sliding" || name == "Fixed"
		testutil.Within(t, 10*time.Second, name, func() {
			for _, k := range []string{"", "x", "yy"} {
				_, _ = l.TryAcquire(k, 1)
				for _, r := range rates {
					err := l.SetRate(k, r)
					if r.Validate() != nil && !errors.Is(err, permits.ErrInvalidConfig) {
						t.Errorf("%s: SetRate(%q, %+v) = %v, want ErrInvalidConfig", name, k, r, err)
					}
					if err != nil && !errors.Is(err, permits.ErrInvalidConfig) {
						t.Errorf("%s: SetRate(%q, %+v) = %v", name, k, r, err)
					}
					_, _ = l.TryAcquire(k, 1)
				}
				for _, b := range bursts {
					err := l.SetBurst(k, b)
					switch {
					case window:
						if !errors.Is(err, keyed.ErrNotTunable) && !errors.Is(err, permits.ErrInvalidConfig) {
							t.Errorf("%s: SetBurst(%q,%d) = %v", name, k, b, err)
						}
					case b < 1:
						if !errors.Is(err, permits.ErrInvalidConfig) {
							t.Errorf("%s: SetBurst(%q,%d) = %v, want ErrInvalidConfig", name, k, b, err)
						}
					default:
						if err != nil && !errors.Is(err, permits.ErrInvalidConfig) {
							t.Errorf("%s: SetBurst(%q,%d) = %v", name, k, b, err)
						}
					}
					_, _ = l.TryAcquire(k, 1)
				}
			}
		})
		l.Close()
	}
}

// TestHostileMaxKeys: the cap is kept and refused with ErrTooManyKeys.
func TestHostileMaxKeys(t *testing.T) {
	l, _ := keyed.New(rdCtors()["GCRA"], keyed.WithMaxKeys(2), keyed.WithIdleTimeout(time.Hour))
	defer l.Close()
	testutil.Within(t, 5*time.Second, "maxkeys", func() {
		for _, k := range []string{"a", "b"} {
			if _, err := l.TryAcquire(k, 1); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range []string{"c", "", strings.Repeat("z", 4096)} {
			if _, err := l.TryAcquire(k, 1); !errors.Is(err, keyed.ErrTooManyKeys) {
				t.Errorf("TryAcquire(new key %.5q) = %v, want ErrTooManyKeys", k, err)
			}
			if _, err := l.Acquire(context.Background(), k, 1); !errors.Is(err, keyed.ErrTooManyKeys) {
				t.Errorf("Acquire(new key) = %v", err)
			}
			if err := l.SetRate(k, algorithms.PerSecond(1)); !errors.Is(err, keyed.ErrTooManyKeys) {
				t.Errorf("SetRate(new key) = %v", err)
			}
		}
		if s := l.Stats(); s.Keys > 2 {
			t.Errorf("Keys = %d > 2", s.Keys)
		}
	})
}

// TestHostileClosed: every method after Close; Close twice; waiters fail.
func TestHostileClosed(t *testing.T) {
	for name, c := range rdCtors() {
		if name == "GCRAwide" {
			continue
		}
		l, _ := keyed.New(c)
		for i := 0; i < 5; i++ {
			l.TryAcquire("w", 1)
		}
		errc := make(chan error, 1)
		go func() { _, err := l.Acquire(context.Background(), "w", 5); errc <- err }()
		for l.Stats().Waiting == 0 { // Close must find the waiter queued
			runtime.Gosched()
		}
		testutil.Within(t, 5*time.Second, name, func() {
			if err := l.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
			if err := l.Close(); err != nil {
				t.Errorf("Close twice = %v", err)
			}
			if err := <-errc; !errors.Is(err, permits.ErrClosed) {
				t.Errorf("%s: waiter = %v", name, err)
			}
			is := func(what string, err error) {
				if !errors.Is(err, permits.ErrClosed) {
					t.Errorf("%s: %s after Close = %v", name, what, err)
				}
			}
			for _, k := range []string{"w", "new", ""} {
				_, err := l.Acquire(context.Background(), k, 1)
				is("Acquire", err)
				_, err = l.TryAcquire(k, 1)
				is("TryAcquire", err)
				_, _, err = l.TryAcquireQuota(k, 1)
				is("TryAcquireQuota", err)
				_, _, err = l.AcquireQuota(context.Background(), k, 1)
				is("AcquireQuota", err)
				is("SetRate", l.SetRate(k, algorithms.PerSecond(1)))
				if name != "Sliding" && name != "Fixed" {
					is("SetBurst", l.SetBurst(k, 2))
				}
			}
			_ = l.Stats()
			_ = l.String()
		})
	}
}

// TestHostileNoOverAdmitConcurrent: many goroutines on a few keys with
// Acquire (short deadlines) and TryAcquire never exceed the per-key bound.
func TestHostileNoOverAdmitConcurrent(t *testing.T) {
	for name, c := range rdCtors() {
		if name == "GCRAwide" {
			continue
		}
		l, _ := keyed.New(c, keyed.WithShards(2))
		var mu sync.Mutex
		got := map[string]int64{}
		start := time.Now()
		var wg sync.WaitGroup
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 300; i++ {
					k := fmt.Sprint("k", (g+i)%3)
					var err error
					if i%2 == 0 {
						_, err = l.TryAcquire(k, 1)
					} else {
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%5)*time.Millisecond)
						_, err = l.Acquire(ctx, k, 1)
						cancel()
					}
					if err == nil {
						mu.Lock()
						got[k]++
						mu.Unlock()
					}
				}
			}(g)
		}
		wg.Wait()
		el := time.Since(start)
		l.Close()
		bound := int64(5+float64(20)*el.Seconds()) + 1 // Mixed has a leaky bucket at 20/s
		if name == "Sliding" || name == "Fixed" {
			bound = int64(5 * (el.Seconds() + 2))
		}
		for k, n := range got {
			if n > bound {
				t.Errorf("%s: key %s admitted %d in %v > %d", name, k, n, el, bound)
			}
		}
	}
}

func TestHostileMaxWaitTinyGrantsFree(t *testing.T) {
	for name, c := range rdCtors() {
		l, _ := keyed.New(c, keyed.WithMaxWait(1))
		if _, err := l.Acquire(context.Background(), "k", 1); err != nil {
			t.Errorf("%s: WithMaxWait(1ns) Acquire with free capacity = %v", name, err)
		}
		l.Close()
	}
}
