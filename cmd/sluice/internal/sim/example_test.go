package sim_test

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sim"
	"github.com/sluicehq/sluice/cmd/sluice/internal/spec"
	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

// Two bursts of 100 on either side of a minute boundary, through a fixed
// and a sliding window of 100 a minute, callers who never wait.
func ExampleRunAll() {
	burst, _ := traffic.Parse("spike:100@59s,100@1m")
	arrivals, _, _ := traffic.Generate([]traffic.Pattern{burst}, 2*time.Minute, 1, nil)
	up, _ := spec.ParseUpstream("100/1m")
	var cfgs []sim.Config
	for _, s := range []string{"fixed:100/1m", "sliding:100/1m"} {
		l, _ := spec.Parse(s)
		cfgs = append(cfgs, sim.Config{Limit: l, MaxWait: 0, Window: time.Minute, Upstream: &up})
	}
	results, err := sim.RunAll(arrivals, cfgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		fmt.Printf("%-14v admitted %d, at most %d in a minute, %d beyond the upstream\n", r.Limit, r.Admitted, r.MaxInWindow, r.Exceeded)
	}
	// Output:
	// fixed:100/m    admitted 200, at most 200 in a minute, 100 beyond the upstream
	// sliding:100/m  admitted 100, at most 100 in a minute, 0 beyond the upstream
}
