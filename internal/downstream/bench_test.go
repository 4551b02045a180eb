package downstream_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/downstream"
)

// BenchmarkArrival is the model's cost per arrival at twice the capacity
// (100 servers, 20 000 arrivals a second), a static pool against an
// adaptive one in the same run: what a simulated minute costs.
func BenchmarkArrival(b *testing.B) {
	c := downstream.Config{Phases: []downstream.Phase{{Servers: 100, Queue: 10, Service: downstream.Service{Mean: 10 * time.Millisecond, Spread: time.Millisecond}}}}
	for _, bc := range []struct {
		name string
		pool func() downstream.Pool
	}{
		{"static", func() downstream.Pool { return downstream.Pool{Name: "s", Floor: 100, Initial: 100, Ceiling: 100} }},
		{"vegas", func() downstream.Pool {
			return downstream.Pool{Name: "v", Controller: &actor.Vegas{}, Floor: 1, Initial: 20, Ceiling: 400}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m, err := downstream.New(c, bc.pool(), time.Second, 1)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				m.Arrive(time.Duration(i) * 50 * time.Microsecond)
			}
		})
	}
}
