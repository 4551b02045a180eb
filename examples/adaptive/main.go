// Command adaptive runs a static concurrency limit and adaptive pools (AIMD,
// Vegas, Gradient2) in front of the same downstream, whose capacity changes
// twice: 100 requests at once, then 40, then 150. It runs on a virtual
// clock (internal/downstream), so 30 simulated seconds take about a second
// and every run prints the same table. With -svg it draws the limit, the
// requests in flight, the latency and the refusals over time.
//
//	go run ./examples/adaptive -svg docs/img/adaptive/capacity.svg
//
// docs/adaptive.md shows the chart and reads the table.
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/internal/downstream"
)

// The scenario: Poisson arrivals at 12,000 a second against servers that
// each take 10 ms ± 1 ms, behind a queue of 50. The static limit of 100 is
// right for the first phase only.
const (
	rate   = 12_000 // arrivals per second
	phase  = 10 * time.Second
	static = 100
	seed   = 29
)

// scenario is the downstream: C = 100, then 40, then 150.
func scenario() downstream.Config {
	svc := downstream.Service{Mean: 10 * time.Millisecond, Spread: time.Millisecond}
	return downstream.Config{Phases: []downstream.Phase{
		{At: 0, Servers: 100, Service: svc, Queue: 50},
		{At: phase, Servers: 40, Service: svc, Queue: 50},
		{At: 2 * phase, Servers: 150, Service: svc, Queue: 50},
	}}
}

// pools are the limits compared, the static one first.
func pools() []downstream.Pool {
	adaptive := func(name string, c actor.Controller) downstream.Pool {
		return downstream.Pool{Name: name, Controller: c, Floor: 1, Initial: 20, Ceiling: 400}
	}
	return []downstream.Pool{
		{Name: "static", Floor: static, Initial: static, Ceiling: static},
		adaptive("aimd", &actor.AIMD{}),
		adaptive("vegas", &actor.Vegas{}),
		adaptive("gradient2", &actor.Gradient2{}),
	}
}

// simulate offers the same arrivals to each pool and returns their results.
func simulate() ([]*downstream.Result, error) {
	cfg, end := scenario(), 3*phase
	var out []*downstream.Result
	for _, p := range pools() {
		m, err := downstream.New(cfg, p, 100*time.Millisecond, seed)
		if err != nil {
			return nil, err
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		for t := time.Duration(0); ; {
			t += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
			if t >= end {
				break
			}
			m.Arrive(t)
		}
		out = append(out, m.Finish(end))
	}
	return out, nil
}

// table prints, per phase and pool, what the downstream served and how
// fast, and what was refused (shed by the pool, 503 from the downstream).
func table(w io.Writer, results []*downstream.Result) {
	fmt.Fprintf(w, "%-9s %-10s %9s %8s %8s %8s %8s\n", "phase", "pool", "goodput/s", "p50", "p99", "shed", "503")
	for i := range results[0].Phases {
		for _, r := range results {
			p := r.Phases[i]
			label := fmt.Sprintf("C=%d", p.Servers)
			fmt.Fprintf(w, "%-9s %-10s %9.0f %8v %8v %8d %8d\n", label, r.Pool.Name, p.Goodput(),
				p.P50.Round(100*time.Microsecond), p.P99.Round(100*time.Microsecond), p.Shed, p.Refused)
		}
	}
}

func main() {
	svg := flag.String("svg", "", "write the chart to this `file`")
	flag.Parse()
	results, err := simulate()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	table(os.Stdout, results)
	if *svg != "" {
		if err := write(*svg, results); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func write(path string, results []*downstream.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	title := "12,000 requests/s against a downstream of 100, then 40, then 150 servers (10 ms ± 1 ms, queue 50)"
	if err := downstream.SVG(f, title, scenario(), results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
