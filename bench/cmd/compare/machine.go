package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/bench/internal/scenario"
)

// noise measures how much of the machine other processes used while the
// comparison ran: every figure here is sensitive to it, and a reader of
// the tables should know.
type noise struct {
	start        time.Time
	busy0, self0 time.Duration
	load0        string
	ok           bool
}

func startNoise() noise {
	busy, ok := machineBusy()
	return noise{start: time.Now(), busy0: busy, self0: scenario.CPUTime(), load0: loadAverage(), ok: ok}
}

// report returns a sentence on the CPU time other processes used, as a
// share of what the machine had, and the load averages.
func (n noise) report() string {
	wall := time.Since(n.start)
	busy, ok := machineBusy()
	load := fmt.Sprintf("load average %s at the start, %s at the end", n.load0, loadAverage())
	if !ok || !n.ok || wall <= 0 {
		return load + "."
	}
	others := (busy - n.busy0) - (scenario.CPUTime() - n.self0)
	share := max(float64(others), 0) / (float64(wall) * float64(runtime.NumCPU()))
	s := fmt.Sprintf("While it ran, other processes (and the hypervisor's steal) took %.0f%% of the machine's CPU time; %s.", share*100, load)
	if share > 0.05 {
		s += " **The machine was not quiet: per-call costs, CPU per permit and the timing columns are inflated and noisy; rerun on an idle machine before quoting them.**"
	}
	return s
}

// machineBusy returns the CPU time all CPUs spent busy since boot (user,
// nice, system, irq, softirq and steal in /proc/stat), where Linux tells.
func machineBusy() (time.Duration, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system [idle iowait] irq softirq steal
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += v
	}
	const userHZ = 100 // USER_HZ, fixed at 100 on Linux for /proc
	return time.Duration(ticks) * time.Second / userHZ, true
}

// loadAverage returns the one-minute load average, or "?".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
