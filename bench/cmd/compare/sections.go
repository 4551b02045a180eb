package main

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/bench/internal/scenario"
)

// Goals, as the issue states them.
const (
	goalDecision  = 1.0 // sluice TryAcquire ÷ x/time/rate AllowN
	goalRoundTrip = 350 // ns per Acquire through the owner
	goalCPU       = 0.7 // sluice CPU per permit ÷ x/time/rate's
	goalWall      = 0.001
	goalShare     = 0.999
	goalHeap      = 128 // bytes per blocked waiter beyond its goroutine
	goalPool      = 1.5 // sluice Pool ÷ x/sync/semaphore
	goalBreaker   = 1.0 // sluice Do ÷ gobreaker Execute
)

type waitCase struct {
	name string
	spec scenario.WaitSpec
}

type stormCase struct {
	name string
	spec scenario.StormSpec
}

// workloads returns the waiting scenarios: the full ones, or a tenth of
// their permits (and a fifth of the storm) for -quick. Bursts are one
// millisecond's worth of the rate.
func workloads(quick bool) ([]waitCase, stormCase, int) {
	w1 := scenario.WaitSpec{Goroutines: 1000, Rate: algorithms.PerSecond(100_000), Burst: 100, Permits: 300_000}
	w2 := scenario.WaitSpec{Goroutines: 10_000, Rate: algorithms.PerSecond(20_000), Burst: 20, Permits: 60_000}
	st := scenario.StormSpec{Waiters: 10_000, Cancelled: 5_000, Rate: algorithms.PerSecond(2_000), Burst: 2, Seed: 1}
	heapN := 10_000
	if quick {
		w1.Permits, w2.Permits = w1.Permits/10, w2.Permits/10
		st = scenario.StormSpec{Waiters: 2_000, Cancelled: 1_000, Rate: algorithms.PerSecond(1_000), Burst: 1, Seed: 1}
		heapN = 2_000
	}
	name := func(s scenario.WaitSpec) string {
		return fmt.Sprintf("%s goroutines at %s/s, %s permits, burst %d", thousands(s.Goroutines), thousands(int(s.Rate.Count)), thousands(s.Permits), s.Burst)
	}
	return []waitCase{{name(w1), w1}, {name(w2), w2}},
		stormCase{fmt.Sprintf("%s waiters, %s cancelled, %s/s, burst %d", thousands(st.Waiters), thousands(st.Cancelled), thousands(int(st.Rate.Count)), st.Burst), st},
		heapN
}

// thousands formats n with thin separators: 100 000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u202f")
		}
		b.WriteRune(c)
	}
	return b.String()
}

func decisionSection(r *runner, b *strings.Builder) {
	b.WriteString("## Non-blocking decision\n\n")
	b.WriteString("ns per call: wall time over the calls of all goroutines together, as `b.RunParallel` reports it. " +
		"sluice is `actor.MustNew(GCRA)` then `TryAcquire(1)`, the lock-free fast path; x/time/rate is `AllowN(time.Now(), 1)`; " +
		"the reference is a bare CAS on a GCRA's theoretical arrival time, the least a lock-free limiter can do per call. " +
		"*Allowed*: 1e9/s, burst 1000, every call passes. *Denied*: 1/hour, burst 1, every call after the first is refused. " +
		fmt.Sprintf("Goal: sluice ≤ %.1f× x/time/rate.\n\n", goalDecision))
	t := table{header: []string{"calls", "goroutines", "sluice TryAcquire", "x/time/rate AllowN", "CAS-on-TAT reference", "sluice ÷ x/time/rate", "sluice ÷ reference", "goal met"}}
	for _, c := range []struct {
		name  string
		rate  algorithms.Rate
		burst int64
	}{
		{"allowed", scenario.AllowedRate, scenario.AllowedBurst},
		{"denied", scenario.DeniedRate, scenario.DeniedBurst},
	} {
		for _, g := range []int{1, 2, 32} {
			m := r.micros("decision "+c.name, g, scenario.Decision(c.rate, c.burst))
			met := "–"
			if m[0].ok && m[1].ok {
				met = yesNo(m[0].ns <= goalDecision*m[1].ns)
			}
			t.add(c.name, fmt.Sprint(g), m[0].cell(), m[1].cell(), m[2].cell(), ratio(m[0].ns, m[1].ns), ratio(m[0].ns, m[2].ns), met)
		}
	}
	t.write(b)
}

func userRatesSection(r *runner, b *strings.Builder) {
	b.WriteString("## Non-blocking decision at the rates users type\n\n")
	procs := runtime.GOMAXPROCS(0)
	fmt.Fprintf(b, "ns per call, as above, at the README's rates, where nearly every call in a loop is refused: "+
		"30/s and 7/s with burst 1, and 1,140,000 tokens per minute with burst 57,000. "+
		"sluice is `actor.MustNew(alg)` then `Allow()` or `TryAcquire(1)` on each algorithm with a lock-free form (the fixed window admits the burst per burst/rate of time); "+
		"x/time/rate is `Allow()` at the same rate and burst. "+
		"A refused `TryAcquire` returns a `*permits.RateLimitError` carrying RetryAfter, its one allocation; `Allow` builds no error. "+
		"%d and %d goroutines: 1 and 16 per core on this machine. Goal: sluice ≤ %.1f× x/time/rate, for every row.\n\n", procs, 16*procs, goalDecision)
	t := table{header: []string{"rate", "goroutines", "algorithm", "sluice Allow", "sluice TryAcquire", "x/time/rate Allow", "Allow ÷ x/time/rate", "TryAcquire ÷ x/time/rate", "goal met"}}
	algs := len(scenario.FastAlgorithms)
	for _, u := range scenario.UserRates {
		for _, g := range []int{procs, 16 * procs} {
			m := r.micros("decision at "+u.Name, g, scenario.AllowAt(u))
			xt := m[len(m)-1]
			for i, a := range scenario.FastAlgorithms {
				allow, try := m[i], m[algs+i]
				met := "–"
				if allow.ok && try.ok && xt.ok {
					met = yesNo(allow.ns <= goalDecision*xt.ns && try.ns <= goalDecision*xt.ns)
				}
				t.add(u.Name, fmt.Sprint(g), a.Name, allow.cell(), try.cell(), xt.cell(), ratio(allow.ns, xt.ns), ratio(try.ns, xt.ns), met)
			}
		}
	}
	t.write(b)
}

func roundTripSection(r *runner, b *strings.Builder) {
	b.WriteString("## Acquire through the owner goroutine\n\n")
	b.WriteString("ns per `Acquire(ctx, 1)` that must go through the limiter's goroutine (mailbox in, reply out) and is granted at once: " +
		"a GCRA at 3,000,000,001/s, whose rate has more than 2^30 units per period after reduction so it keeps its wide form with no lock-free path, and a sliding window, which has none. " +
		"The bare mailbox round trip is the same message exchange with no decision: the floor for this design. " +
		"x/time/rate `WaitN` (a mutex, no goroutine hop) is there for scale. " +
		fmt.Sprintf("Goal: ≤ %d ns per round trip with many goroutines calling.\n\n", goalRoundTrip))
	t := table{header: []string{"goroutines", "sluice Acquire (GCRA 3,000,000,001/s)", "sluice Acquire (sliding window)", "bare mailbox round trip", "x/time/rate WaitN", "sluice GCRA ÷ bare", "goal met"}}
	for _, g := range []int{1, 64} {
		m := r.micros("owner round trip", g, scenario.RoundTrip())
		met := "–"
		if m[0].ok && m[1].ok {
			met = yesNo(max(m[0].ns, m[1].ns) <= goalRoundTrip)
		}
		if g == 1 {
			met += " (one caller: latency)"
		}
		t.add(fmt.Sprint(g), m[0].cell(), m[1].cell(), m[2].cell(), m[3].cell(), ratio(m[0].ns, m[2].ns), met)
	}
	t.write(b)
}

// waitStats collects the runs of one library on one workload.
type waitStats struct {
	wall, cpu, strict, apart, excess []float64
}

func (w *waitStats) add(res scenario.WaitResult, s scenario.WaitSpec) {
	w.wall = append(w.wall, float64(res.Wall)/float64(s.Ideal()))
	w.cpu = append(w.cpu, float64(res.CPU)/float64(s.Permits))
	w.strict = append(w.strict, float64(res.FIFOViolations))
	w.apart = append(w.apart, float64(res.FIFOViolationsApart))
	w.excess = append(w.excess, float64(max(res.MaxExcess, 0)))
}

func waitSection(r *runner, b *strings.Builder) {
	b.WriteString("## Wait path\n\n")
	fmt.Fprintf(b, "Callers loop on `Wait` until the permits are spent, so the limiter always has waiters. "+
		"*wall ÷ ideal*: first grant to last grant over (permits − burst)/rate. "+
		"*CPU per permit*: user+system time of the process (getrusage) over the permits. "+
		"*Overtaken*: callers granted after a caller that arrived strictly later (arrival and grant stamped from shared atomic counters just before the call and just after it returns); "+
		"the stamps are outside the limiter, so scheduling noise alone puts most callers of every library in that column, and the next one counts only overtakers that arrived more than %v later "+
		"(delays of that size still happen between a stamp and the call or the grant, and a few show up even for uber ratelimit, which hands out slots in the order its CAS succeeds: FIFO is reported here, not scored). "+
		"*Excess*: the largest number of grants beyond b + ⌊r·d⌋ over any window of the grant timestamps, median and worst run, and how much of the rate that is. "+
		"uber ratelimit has no context and no burst; it runs with slack b−1. "+
		"Goals: sluice's CPU per permit ≤ %.1f× x/time/rate's; wall within %.1f%% of ideal; never above the bound.\n\n", scenario.FIFOApart, goalCPU, goalWall*100)
	kinds := []scenario.WaiterKind{scenario.Sluice, scenario.XTime, scenario.Uber}
	t := table{header: []string{"workload", "library", "wall ÷ ideal", "CPU per permit", "overtaken", fmt.Sprintf("overtaken by a caller arriving > %v later", scenario.FIFOApart), "max excess over b + ⌊r·d⌋ (worst run)"}}
	goals := table{header: []string{"workload", "goal", "measured", "met"}}
	for _, wc := range r.cfg.wait {
		stats := make([]waitStats, len(kinds))
		ok := make([]bool, len(kinds))
		for i := range ok {
			ok[i] = true
		}
		for rep := range r.cfg.heavy {
			for i, k := range kinds {
				if !ok[i] {
					continue
				}
				res, err := scenario.RunWait(k, wc.spec)
				if err != nil {
					ok[i] = false
					r.fail(fmt.Errorf("wait path, %s: %w", wc.name, err))
					continue
				}
				r.logf("wait path, %s, run %d/%d: %s wall÷ideal %.4f, CPU/permit %s, overtaken %d (%d by >%v), excess %d",
					wc.name, rep+1, r.cfg.heavy, k.Name, float64(res.Wall)/float64(wc.spec.Ideal()), formatDuration(res.CPU/time.Duration(wc.spec.Permits)),
					res.FIFOViolations, res.FIFOViolationsApart, scenario.FIFOApart, res.MaxExcess)
				stats[i].add(res, wc.spec)
			}
		}
		perSec := float64(wc.spec.Rate.Count) / wc.spec.Rate.Per.Seconds()
		for i, k := range kinds {
			if !ok[i] {
				t.add(wc.name, k.Name, "error", "", "", "", "")
				continue
			}
			s := stats[i]
			t.add(wc.name, k.Name,
				fmt.Sprintf("%.4f", median(s.wall)),
				formatNs(median(s.cpu)),
				fmt.Sprintf("%s of %s", thousands(int(median(s.strict))), thousands(wc.spec.Permits)),
				fmt.Sprintf("%s (worst %s)", thousands(int(median(s.apart))), thousands(int(slices.Max(s.apart)))),
				excessCell(median(s.excess), slices.Max(s.excess), perSec))
		}
		if ok[0] && ok[1] {
			sl, xt := stats[0], stats[1]
			cpuRatio := median(sl.cpu) / median(xt.cpu)
			goals.add(wc.name, fmt.Sprintf("CPU per permit ≤ %.1f× x/time/rate", goalCPU),
				fmt.Sprintf("%.2f× (%s vs %s)", cpuRatio, formatNs(median(sl.cpu)), formatNs(median(xt.cpu))), yesNo(cpuRatio <= goalCPU))
		}
		if ok[0] {
			sl := stats[0]
			off := median(sl.wall) - 1
			goals.add(wc.name, fmt.Sprintf("wall within %.1f%% of ideal", goalWall*100), fmt.Sprintf("%+.3f%%", off*100), yesNo(math.Abs(off) <= goalWall))
			worst := slices.Max(sl.excess)
			goals.add(wc.name, "never above b + ⌊r·d⌋", excessCell(median(sl.excess), worst, perSec), yesNo(worst <= 0))
		}
	}
	t.write(b)
	b.WriteString("sluice against its goals:\n\n")
	goals.write(b)
}

// excessCell formats a median and worst excess in grants and in time at
// the rate.
func excessCell(med, worst, perSec float64) string {
	if worst <= 0 {
		return "never above"
	}
	return fmt.Sprintf("%s = %s of rate (worst %s)", thousands(int(med)), formatDuration(time.Duration(med/perSec*1e9)), thousands(int(worst)))
}

func stormSection(r *runner, b *strings.Builder) {
	sc := r.cfg.storm
	b.WriteString("## Cancellation storm\n\n")
	fmt.Fprintf(b, "%s: every waiter calls `Wait` once at the start; a random half have their context cancelled at a random moment while the queue is busy. "+
		"*Share*: (granted − burst) over rate × (first grant to last grant): the rate the others still got. "+
		"x/time/rate gives a cancelled reservation's tokens back only when no later reservation was made, so its queue keeps the holes. "+
		"Goal: sluice ≥ %.3f of the configured rate.\n\n", sc.name, goalShare)
	kinds := []scenario.WaiterKind{scenario.Sluice, scenario.XTime}
	t := table{header: []string{"library", "granted", "cancelled", "first to last grant", "share of the configured rate", "goal met"}}
	type acc struct{ granted, cancelled, span, share []float64 }
	accs := make([]acc, len(kinds))
	failed := make([]bool, len(kinds))
	for rep := range r.cfg.heavy {
		for i, k := range kinds {
			if failed[i] {
				continue
			}
			spec := sc.spec
			spec.Seed += uint64(rep)
			res, err := scenario.RunStorm(k, spec)
			if err != nil {
				failed[i] = true
				r.fail(fmt.Errorf("storm, %s: %w", k.Name, err))
				continue
			}
			r.logf("cancellation storm, run %d/%d: %s granted %d, cancelled %d, span %s, share %.5f", rep+1, r.cfg.heavy, k.Name, res.Granted, res.Cancelled, formatDuration(res.Span), res.Share)
			a := &accs[i]
			a.granted = append(a.granted, float64(res.Granted))
			a.cancelled = append(a.cancelled, float64(res.Cancelled))
			a.span = append(a.span, float64(res.Span))
			a.share = append(a.share, res.Share)
		}
	}
	for i, k := range kinds {
		if failed[i] {
			t.add(k.Name, "error", "", "", "", "")
			continue
		}
		a := accs[i]
		share := median(a.share)
		t.add(k.Name, thousands(int(median(a.granted))), thousands(int(median(a.cancelled))), formatNs(median(a.span)), fmt.Sprintf("%.4f", share), yesNo(share >= goalShare))
	}
	t.write(b)
}

func heapSection(r *runner, b *strings.Builder) {
	n := r.cfg.heapN
	b.WriteString("## Heap per blocked waiter\n\n")
	fmt.Fprintf(b, "%s goroutines blocked at once: live heap after a GC (`runtime.MemStats.HeapAlloc`) with them blocked, minus before they started, per goroutine; "+
		"then minus the same for goroutines blocked on a plain channel, which leaves what waiting in the limiter costs beyond a goroutine. "+
		"With a cancellable context, every waiter also selects on `ctx.Done()`; x/time/rate needs one to be released at all. "+
		"Goal: sluice ≤ %d B beyond its goroutine.\n\n", thousands(n), goalHeap)
	blockers := []scenario.Blocker{scenario.ChannelBlocker, scenario.SluiceBlocker(false), scenario.SluiceBlocker(true), scenario.XTimeBlocker}
	// Goroutine descriptors are reused once they exist: make them all
	// before the first measurement so that every blocker finds them.
	if _, err := scenario.HeapPerWaiter(scenario.ChannelBlocker, n); err != nil {
		r.fail(err)
		return
	}
	vals := make([][]float64, len(blockers))
	failed := make([]bool, len(blockers))
	for rep := range r.cfg.count {
		for i, bl := range blockers {
			if failed[i] {
				continue
			}
			v, err := scenario.HeapPerWaiter(bl, n)
			if err != nil {
				failed[i] = true
				r.fail(err)
				continue
			}
			r.logf("heap per waiter, run %d/%d: %s %.0f B", rep+1, r.cfg.count, bl.Name, v)
			vals[i] = append(vals[i], v)
		}
	}
	if failed[0] {
		return
	}
	base := median(vals[0])
	t := table{header: []string{"blocked in", "heap per goroutine", "beyond a plain-channel waiter", "goal met"}}
	for i, bl := range blockers {
		if failed[i] {
			t.add(bl.Name, "error", "", "")
			continue
		}
		v := median(vals[i])
		beyond, met := "(baseline)", "–"
		if i > 0 {
			beyond = fmt.Sprintf("%.0f B", v-base)
			if strings.HasPrefix(bl.Name, "sluice") {
				met = yesNo(v-base <= goalHeap)
			}
		}
		t.add(bl.Name, fmt.Sprintf("%.0f B", v), beyond, met)
	}
	t.write(b)
}

func poolSection(r *runner, b *strings.Builder) {
	b.WriteString("## Concurrency pool\n\n")
	fmt.Fprintf(b, "ns per `Acquire(ctx, 1)` then `Release`, on a pool of %d so that nobody waits. Goal: sluice ≤ %.1f× x/sync/semaphore.\n\n", scenario.PoolSize, goalPool)
	t := table{header: []string{"goroutines", "sluice Pool", "x/sync/semaphore", "sluice ÷ semaphore", "goal met"}}
	for _, g := range []int{1, 2, 32} {
		m := r.micros("pool", g, scenario.Pool())
		met := "–"
		if m[0].ok && m[1].ok {
			met = yesNo(m[0].ns <= goalPool*m[1].ns)
		}
		t.add(fmt.Sprint(g), m[0].cell(), m[1].cell(), ratio(m[0].ns, m[1].ns), met)
	}
	t.write(b)
}
