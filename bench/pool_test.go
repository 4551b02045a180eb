package bench_test

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/bench/internal/scenario"
)

// BenchmarkPool: actor.Pool's Acquire(ctx, 1) then Release beside
// x/sync/semaphore's, with the bodies cmd/compare times, on a pool large
// enough that nobody waits: the cost of taking and giving back capacity.
// g=1 is the uncontended path. Goal: sluice ≤ 1.5× semaphore, 0 allocs.
//
//	go test -run '^$' -bench Pool -benchmem -count 5 ./...
func BenchmarkPool(b *testing.B) {
	for _, g := range []int{1, 2} {
		for _, m := range scenario.Pool() {
			b.Run(fmt.Sprintf("g=%d/impl=%s", g, poolImpl(m.Name)), func(b *testing.B) { benchMicro(b, m, g) })
		}
	}
}

func poolImpl(name string) string {
	switch name {
	case "sluice Pool":
		return "sluice"
	case "x/sync/semaphore":
		return "semaphore"
	}
	return name
}
