package bench_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every scenario waits for the goroutines it starts and closes its
// limiters; this holds the benchmarks to it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
