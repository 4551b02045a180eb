package keyed_test

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/keyed"
)

// BenchmarkTryAcquire decides on 1000 keys that stay live (one unit a
// second with bursts of 10^8: never full again during a run), from
// GOMAXPROCS goroutines, on the two paths of the same decision: cell keys,
// lock-free, and keys whose GCRA is not the limiter's shared configuration
// (the first key's), decided on their own algorithm under the shard's read
// lock.
func BenchmarkTryAcquire(b *testing.B) {
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "client-" + strconv.Itoa(i)
	}
	for _, c := range []struct {
		name  string
		first int64 // the first key's burst: the limiter's shared configuration
	}{
		{"cells", 100_000_000},
		{"own-algorithm", 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			l, err := keyed.New(func(key string) (algorithms.Algorithm, error) {
				if key == "first" {
					return algorithms.NewGCRA(algorithms.PerSecond(1), c.first)
				}
				return algorithms.NewGCRA(algorithms.PerSecond(1), 100_000_000)
			})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			for _, k := range append([]string{"first"}, keys...) {
				if _, err := l.TryAcquire(k, 1); err != nil {
					b.Fatal(err)
				}
			}
			if keyed.IsCell(l, keys[0]) != (c.name == "cells") {
				b.Fatalf("%s: the keys' kind is not the one measured", c.name)
			}
			var next atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := next.Add(7919)
				for pb.Next() {
					i++
					if _, err := l.TryAcquire(keys[i%uint64(len(keys))], 1); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
