package pooltable_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/pooltable"
)

// BenchmarkGet finds a key's pool in parallel, over 16 keys that all have
// one: the lookup every request makes. The baseline is the table the
// Transport had, a map behind a sync.Mutex.
func BenchmarkGet(b *testing.B) {
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = fmt.Sprint("host", i)
	}
	b.Run("table", func(b *testing.B) {
		tb, err := pooltable.New(pooltable.Config{Name: "bench", Max: 64,
			NewController: func() actor.Controller { return &actor.AIMD{} }})
		if err != nil {
			b.Fatal(err)
		}
		defer tb.Close()
		for _, k := range keys {
			_, _ = tb.Get(k)
		}
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				if _, err := tb.Get(keys[i%len(keys)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("baseline=mutex-map", func(b *testing.B) {
		var mu sync.Mutex
		m := map[string]*pooltable.Entry{}
		for _, k := range keys {
			m[k] = &pooltable.Entry{Key: k}
		}
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				mu.Lock()
				e := m[keys[i%len(keys)]]
				mu.Unlock()
				if e == nil {
					b.Fatal("no entry")
				}
			}
		})
	})
}
