package bench_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bench/internal/scenario"
)

// zipfKeys is one sequence for every keyed benchmark: 2M draws over 1M
// distinct keys, Zipf with s = 1.1. Made on first use, not at init: 2M
// strings live for the whole binary would be scanned by every GC cycle of
// every other benchmark in it (a quarter of BenchmarkRedis's CPU profile).
var zipfKeys = sync.OnceValue(func() []string { return scenario.ZipfKeys(1<<21, 1_000_000, 1.1, 1) })

// BenchmarkKeyedZipf: a decision on a key drawn from 1M under a Zipf
// distribution. sluice's keyed TryAcquire and TryAcquireQuota against
// httprate's OnLimit.
func BenchmarkKeyedZipf(b *testing.B) {
	for _, g := range []int{1, 2, 32} {
		for _, m := range scenario.Keyed(zipfKeys()) {
			b.Run(fmt.Sprintf("goroutines=%d/impl=%s", g, keyedImpl(m.Name)), func(b *testing.B) { benchMicro(b, m, g) })
		}
	}
}

// BenchmarkMiddleware: one request through a handler that writes nothing,
// bare and behind each library's per-IP middleware.
func BenchmarkMiddleware(b *testing.B) {
	for _, g := range []int{1, 2, 32} {
		for _, m := range scenario.Middleware() {
			b.Run(fmt.Sprintf("goroutines=%d/impl=%s", g, keyedImpl(m.Name)), func(b *testing.B) { benchMicro(b, m, g) })
		}
	}
}

func keyedImpl(name string) string {
	switch name {
	case "sluice keyed TryAcquire", "sluice httplimit":
		return "sluice"
	case "sluice keyed TryAcquireQuota":
		return "sluice-quota"
	case "httprate OnLimit", "httprate LimitByIP":
		return "httprate"
	case "bare handler":
		return "bare"
	}
	return name
}

// TestKeyedMemory runs the memory scenarios small, so that the command's
// section cannot rot: the idle keys are dropped and their memory goes.
func TestKeyedMemory(t *testing.T) {
	s, err := scenario.SluiceKeyedMemory(20_000)
	if err != nil {
		t.Fatal(err)
	}
	h, err := scenario.HTTPRateMemory(20_000, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sluice: %.0f B per key, %.0f B idle; httprate: %.0f B per key, %.0f B idle", s.PerKey, s.IdleHeap, h.PerKey, h.IdleHeap)
	if s.PerKey <= 0 || h.PerKey <= 0 {
		t.Errorf("per-key bytes: sluice %.0f, httprate %.0f", s.PerKey, h.PerKey)
	}
	if s.IdleHeap > 0.05*s.PerKey*20_000 {
		t.Errorf("sluice keeps %.0f B after its keys went idle, %.0f%% of their peak", s.IdleHeap, 100*s.IdleHeap/(s.PerKey*20_000))
	}
}
