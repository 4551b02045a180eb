package algorithms_test

import (
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/algorithms"
)

// baseline is the cheapest decision there is: a counter compared with a
// limit, reset when the instant moves to a new second. It shows what the
// real algorithms cost on top of reading an instant.
type baseline struct {
	limit, count int64
	second       int64
}

func (b *baseline) AllowAt(now time.Time, cost int64) algorithms.Decision {
	if s := now.Unix(); s != b.second {
		b.second, b.count = s, 0
	}
	if b.count+cost > b.limit {
		return algorithms.Decision{}
	}
	b.count += cost
	return algorithms.Decision{Allowed: true}
}

func (b *baseline) Capacity() int64 { return b.limit }

// BenchmarkAllowAt measures one decision in the steady state: 1000 units per
// second with a capacity of 1000, one unit every millisecond (each allowed),
// after a warm-up second, so the sliding window keeps its 1000 entries.
func BenchmarkAllowAt(b *testing.B) {
	cases := []struct {
		name string
		new  func() algorithms.Algorithm
	}{
		{"baseline", func() algorithms.Algorithm { return &baseline{limit: 1000} }},
		{"GCRA", func() algorithms.Algorithm { a, _ := algorithms.NewGCRA(algorithms.PerSecond(1000), 1000); return a }},
		{"GCRA-3per-s", func() algorithms.Algorithm { a, _ := algorithms.NewGCRA(algorithms.PerSecond(3), 1000); return a }},
		{"TokenBucket", func() algorithms.Algorithm {
			a, _ := algorithms.NewTokenBucket(algorithms.PerSecond(1000), 1000)
			return a
		}},
		{"LeakyBucket", func() algorithms.Algorithm {
			a, _ := algorithms.NewLeakyBucket(algorithms.PerSecond(1000), 1000)
			return a
		}},
		{"SlidingWindow", func() algorithms.Algorithm {
			a, _ := algorithms.NewSlidingWindow(algorithms.Rate{Count: 1000, Per: time.Second})
			return a
		}},
		{"FixedWindow", func() algorithms.Algorithm {
			a, _ := algorithms.NewFixedWindow(algorithms.Rate{Count: 1000, Per: time.Second})
			return a
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			a := c.new()
			step := time.Millisecond
			if c.name == "GCRA-3per-s" {
				step = 334 * time.Millisecond
			}
			at := t0
			for range 1000 { // warm up: fill the window
				a.AllowAt(at, 1)
				at = at.Add(step)
			}
			denied := 0
			b.ReportAllocs()
			for b.Loop() {
				if !a.AllowAt(at, 1).Allowed {
					denied++
				}
				at = at.Add(step)
			}
			if denied > 0 {
				b.Fatalf("%d denied in the steady state", denied)
			}
		})
	}
}

// BenchmarkAllowAtDenied measures a denial: the capacity is gone and the
// same instant asks again, so RetryAt is computed every time.
func BenchmarkAllowAtDenied(b *testing.B) {
	for _, c := range algorithmsUnderTest {
		b.Run(c.name, func(b *testing.B) {
			a, _ := c.new(1000, time.Second)
			for i := range 1000 {
				a.AllowAt(t0.Add(time.Duration(i)*time.Microsecond), 1)
			}
			now := t0.Add(999 * time.Microsecond) // the last admission; the bucket has refilled 0.999
			b.ReportAllocs()
			for b.Loop() {
				if a.AllowAt(now, 1).Allowed {
					b.Fatal("allowed")
				}
			}
		})
	}
}

// BenchmarkGCRAParallel: the lock-free fast paths from every P, against the
// baseline of the same GCRA behind a mutex. Each goroutine moves its own
// instant forward by a microsecond a call; the rate (one unit per ns) admits
// nearly everything, so the CAS on the state word is what is measured.
//
// The lock-free paths answer "not open" for an instant beyond the range of
// the state word's current epoch, which the benchmark's instants pass now
// and then: the owner decides those, which moves the epoch on. owner stands
// in for it, one goroutine at a time.
func BenchmarkGCRAParallel(b *testing.B) {
	rate := algorithms.Rate{Count: 1, Per: time.Nanosecond}
	var mu sync.Mutex
	owner := func(g *algorithms.GCRA, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if !g.AllowAt(at, 1).Allowed {
			panic("refused")
		}
	}
	b.Run("TryAllowAt", func(b *testing.B) {
		g := newGCRA(b, rate, 1_000_000)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			at := t0
			for pb.Next() {
				if _, open := g.TryAllowAt(at, 1); !open {
					owner(g, at)
				}
				at = at.Add(time.Microsecond)
			}
		})
	})
	b.Run("TryAdmitAt", func(b *testing.B) {
		g := newGCRA(b, rate, 1_000_000)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			at := t0
			for pb.Next() {
				if _, _, open := g.TryAdmitAt(at, 1); !open {
					owner(g, at)
				}
				at = at.Add(time.Microsecond)
			}
		})
	})
	b.Run("MutexAllowAt", func(b *testing.B) {
		g := newGCRA(b, rate, 1_000_000)
		var mu sync.Mutex
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			at := t0
			for pb.Next() {
				mu.Lock()
				g.AllowAt(at, 1)
				mu.Unlock()
				at = at.Add(time.Microsecond)
			}
		})
	})
}
