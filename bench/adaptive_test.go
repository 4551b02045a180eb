package bench_test

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/bench/internal/scenario"
)

// BenchmarkAdaptive: Acquire(ctx, 1) then the end of the permit with a
// success, for a plain actor.Pool (the baseline), sluice's AdaptivePool
// (Done) and failsafe-go's adaptive limiter (Record), with the bodies
// cmd/compare -only adaptive times, on limits high enough that nobody
// waits. Goal: AdaptivePool ≤ 1.5× Pool at 1 and 64 goroutines.
//
//	go test -run '^$' -bench Adaptive -benchmem -count 5 .
func BenchmarkAdaptive(b *testing.B) {
	for _, g := range []int{1, 64} {
		for _, m := range scenario.AdaptiveCost() {
			b.Run(fmt.Sprintf("g=%d/impl=%s", g, m.Name), func(b *testing.B) { benchMicro(b, m, g) })
		}
	}
}
