package redislimit_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// A limit no decision reaches: the benchmarks measure decisions, not
// waits (bench/internal/scenario's RedisRate and RedisBurst).
var (
	benchRate  = algorithms.PerSecond(1_000_000_000)
	benchBurst = int64(1_000_000)
)

// BenchmarkCallers measures one Acquire among 64 callers against one
// redis-server: on one key (a Limiter) and on 1,000 keys (a Keyed, each
// caller walking the keys from a place of its own). The single-node path
// a Cluster's per-node batches must not slow down.
//
//	go test -run '^$' -bench Callers -count 5 . | benchstat /dev/stdin
func BenchmarkCallers(b *testing.B) {
	c := redistest.Test(b).Client(b)
	b.Run("keys=1/callers=64", func(b *testing.B) {
		l, err := redislimit.New(c, "bench:one", benchRate, benchBurst)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		runCallers(b, 64, func(ctx context.Context, _ int) error { _, err := l.Acquire(ctx, 1); return err })
	})
	b.Run("keys=1000/callers=64", func(b *testing.B) {
		k, err := redislimit.NewKeyed(c, "bench:", benchRate, benchBurst)
		if err != nil {
			b.Fatal(err)
		}
		defer k.Close()
		keys := benchKeys(1000, func(string) bool { return true })
		runCallers(b, 64, func(ctx context.Context, i int) error { _, err := k.Acquire(ctx, keys[i%len(keys)], 1); return err })
	})
}

// runCallers runs decide from callers goroutines for b.N decisions in
// all, telling each its count of calls plus a start of its own.
func runCallers(b *testing.B, callers int, decide func(ctx context.Context, i int) error) {
	b.Helper()
	var seed atomic.Int64
	// RunParallel runs parallelism × GOMAXPROCS goroutines.
	b.SetParallelism(max(callers/runtime.GOMAXPROCS(0), 1))
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := int(seed.Add(7919))
		for pb.Next() {
			if err := decide(ctx, i); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// benchKeys returns n keys that keep says yes to.
func benchKeys(n int, keep func(string) bool) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		if k := "k" + strconv.Itoa(i); keep(k) {
			keys = append(keys, k)
		}
	}
	return keys
}
