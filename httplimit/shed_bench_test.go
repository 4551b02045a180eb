package httplimit_test

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
)

// BenchmarkShedding is the cost of a route's slot: a handler alone, behind
// a Shedder, behind Middleware's rate limit, and behind both, each request
// from one of 100 clients to one route, none refused (the limit is a
// million a second, the pool's 1000).
func BenchmarkShedding(b *testing.B) {
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	lim, err := keyed.NewGCRA[string](algorithms.PerSecond(1_000_000), 1_000_000)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = lim.Close() })
	key, err := httplimit.KeyByIP()
	if err != nil {
		b.Fatal(err)
	}
	s, err := httplimit.NewShedder(byPath, aimd, httplimit.WithPoolOptions(actor.WithLimits(1000, 1000, 1000)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	for _, c := range []struct {
		name string
		h    http.Handler
	}{
		{"handler", noop},
		{"shedder", s.Handler(noop)},
		{"middleware", httplimit.Middleware(lim, key)(noop)},
		{"middleware+shedder", httplimit.Middleware(lim, key, httplimit.WithShedder(s))(noop)},
	} {
		b.Run(c.name, func(b *testing.B) {
			reqs := clients(100)
			w := &headerOnly{h: http.Header{}}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				clear(w.h)
				c.h.ServeHTTP(w, reqs[i%len(reqs)])
				i++
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				reqs := clients(100)
				w := &headerOnly{h: http.Header{}}
				i := 0
				for pb.Next() {
					clear(w.h)
					c.h.ServeHTTP(w, reqs[i%len(reqs)])
					i++
				}
			})
		})
	}
}
