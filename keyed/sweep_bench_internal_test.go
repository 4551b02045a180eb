package keyed

import (
	"testing"

	"github.com/sluicehq/sluice/algorithms"
)

// BenchmarkSweepPass is one pass of an owner over a large table of
// 100 000 cell keys in use (none idle): the cost of a pass per slot.
func BenchmarkSweepPass(b *testing.B) {
	l, err := New(func(int) (algorithms.Algorithm, error) { return algorithms.NewGCRA(algorithms.PerHour(1), 10) }, WithShards(1))
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100_000 {
		if _, err := l.TryAcquire(i, 1); err != nil {
			b.Fatal(err)
		}
	}
	_ = l.Close() // the owner gone, its table stays: the benchmark is its only sweeper
	s := l.shards[0]
	slots := len(s.tab.Load().slots)
	b.ResetTimer()
	for range b.N {
		t := s.tab.Load()
		lk := s.look(l.stamp(), len(t.slots))
		s.mu.Lock()
		for i := range t.slots {
			s.visit(&t.slots[i], &lk)
		}
		s.mu.Unlock()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(slots), "ns/slot")
}
