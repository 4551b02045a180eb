package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/bench/internal/scenario"
)

// Goals of the keyed section, as issue 12 states them.
const (
	goalKeyBytes = 64 // B of state per active GCRA key beyond the map entry
)

// keyedSizes returns the number of distinct keys for the memory and Zipf
// scenarios: a million, or a tenth for -quick.
func keyedSizes(quick bool) int {
	if quick {
		return 100_000
	}
	return 1_000_000
}

func keyedSection(r *runner, b *strings.Builder) {
	n := keyedSizes(r.cfg.quick)
	if r.cfg.d < 5_000_000 { // the command's own tests: a tiny run
		n = 10_000
	}
	b.WriteString("## Keyed limits\n\n")
	fmt.Fprintf(b, "sluice is `keyed.New` with a GCRA per key (%v, burst %d; every key of that configuration keeps only a one-word `algorithms.Cell`, decided without a lock); the peer is "+
		"github.com/go-chi/httprate v0.16.1 (its sliding window of %d per %v over two fixed windows of hashed keys).\n\n",
		scenario.KeyedRate, scenario.KeyedBurst, scenario.KeyedRate.Count, scenario.KeyedRate.Per)

	// Memory.
	var sp, si, hp, hi []float64
	for range r.cfg.heavy {
		s, err := scenario.SluiceKeyedMemory(n)
		if err != nil {
			r.fail(fmt.Errorf("keyed memory: %w", err))
			return
		}
		h, err := scenario.HTTPRateMemory(n, httprateWindow(n))
		if err != nil {
			r.fail(fmt.Errorf("httprate memory: %w", err))
			return
		}
		r.logf("keyed memory, %d keys (%d live when weighed): sluice %.0f B/key, %.0f B idle; httprate %.0f B/key, %.0f B idle", n, s.Live, s.PerKey, s.IdleHeap, h.PerKey, h.IdleHeap)
		sp, si, hp, hi = append(sp, s.PerKey), append(si, s.IdleHeap), append(hp, h.PerKey), append(hi, h.IdleHeap)
	}
	fmt.Fprintf(b, "**Memory**, %s distinct keys, each used once: live heap per active key (key strings excluded; sluice's keys refill over longer than making them takes, and the heap is shared among those live when weighed), and the live heap "+
		"left once every key has gone idle (sluice: dropped by its owners; httprate: two of its windows later, a window longer than making the keys takes), above the limiter's own. "+
		"Goal: ≤ %d B of state per GCRA key beyond the map entry, smaller per key than httprate, and back to the baseline when idle.\n\n",
		thousands(n), goalKeyBytes)
	t := table{header: []string{"subject", "B per active key", "heap left when idle", "sluice ÷ httprate (per key)"}}
	t.add("sluice keyed", fmt.Sprintf("%.0f B", median(sp)), formatBytes(median(si)), ratio(median(sp), median(hp)))
	t.add("httprate", fmt.Sprintf("%.0f B", median(hp)), formatBytes(median(hi)), "")
	t.write(b)

	// Decisions under Zipf.
	keys := scenario.ZipfKeys(2*n, n, 1.1, 1)
	b.WriteString(fmt.Sprintf("**Decisions**, keys drawn from %s under Zipf (s = 1.1): ns per decision (decisions/s in brackets). "+
		"`TryAcquireQuota` also returns what the RateLimit fields need; httprate's `OnLimit` is its whole per-request decision, "+
		"which sets three headers too.\n\n", thousands(n)))
	t = table{header: []string{"goroutines", "sluice TryAcquire", "sluice TryAcquireQuota", "httprate OnLimit", "sluice Quota ÷ httprate"}}
	for _, g := range []int{1, 2, 32} {
		m := r.micros("keyed zipf", g, scenario.Keyed(keys))
		t.add(fmt.Sprint(g), perSec(m[0]), perSec(m[1]), perSec(m[2]), ratio(m[1].ns, m[2].ns))
	}
	t.write(b)

}

// middlewareSection measures httplimit.Middleware against httprate's.
func middlewareSection(r *runner, b *strings.Builder) {
	b.WriteString("## HTTP middleware\n\n")
	fmt.Fprintf(b, "**Middleware**, one request through a handler that writes nothing, from 1000 client addresses in turn, every request passing, "+
		"with the RateLimit fields on: sluice is `httplimit.Middleware` over `keyed.New` with a GCRA per key, keyed by `KeyByIP()`; the peer is httprate's `LimitBy` keyed by the peer's address. ns per request (allocations per request in brackets), and the overhead above the bare handler; "+
		"shadow is the same middleware `WithShadow`. Goals: sluice ≤ %.1f× httprate per request with ≤ %d allocation, and shadow within %d%% of enforcing.\n\n",
		goalMiddlewareRatio, goalMiddlewareAllocs, goalShadowPercent)
	middlewareTable(r, b, "middleware", scenario.Middleware, middlewareGoals)
	b.WriteString("**Refused**: the same with limits of one request an hour, every request but each client's first refused: " +
		"sluice enforcing and httprate answer 429 (sluice with its problem+json body), shadow calls its hook and serves the request. " +
		"Goal: shadow within 10% of enforcing, or cheaper.\n\n")
	middlewareTable(r, b, "middleware refused", scenario.MiddlewareRefused, shadowGoal)
}

// middlewareTable measures subjects on 1, 2 and 32 goroutines and writes
// their table, judged by goals.
func middlewareTable(r *runner, b *strings.Builder, label string, subjects func() []scenario.Micro, goals func(enforce, shadow, peer micro) string) {
	t := table{header: []string{"goroutines", "bare handler", "sluice httplimit", "sluice shadow", "httprate LimitByIP", "sluice overhead", "httprate overhead", "sluice ÷ httprate", "shadow ÷ enforcing", "goal met"}}
	for _, g := range []int{1, 2, 32} {
		m := r.micros(label, g, subjects())
		bare, enforce, shadow, peer := m[0], m[1], m[2], m[3]
		t.add(fmt.Sprint(g), bare.cell(), enforce.cell(), shadow.cell(), peer.cell(), formatNs(enforce.ns-bare.ns), formatNs(peer.ns-bare.ns),
			ratio(enforce.ns, peer.ns), ratio(shadow.ns, enforce.ns), goals(enforce, shadow, peer))
	}
	t.write(b)
}

// shadowGoal says whether shadow is within goalShadowPercent of enforcing.
func shadowGoal(enforce, shadow, _ micro) string {
	if !enforce.ok || !shadow.ok {
		return "–"
	}
	return yesNo(shadowWithin(enforce, shadow))
}

func shadowWithin(enforce, shadow micro) bool {
	return shadow.ns <= enforce.ns*(1+goalShadowPercent/100.0)
}

// Goals of the middleware table, as issue 27 states them.
const (
	goalMiddlewareRatio  = 0.5 // sluice's ns per request over httprate's
	goalMiddlewareAllocs = 1   // per request, with the fields on
	goalShadowPercent    = 10  // shadow over enforcing, less one
)

// middlewareGoals says whether the three goals are met, naming those that
// are not.
func middlewareGoals(enforce, shadow, peer micro) string {
	if !enforce.ok || !shadow.ok || !peer.ok {
		return "–"
	}
	var missed []string
	if enforce.ns > goalMiddlewareRatio*peer.ns {
		missed = append(missed, "ratio")
	}
	if enforce.allocs > goalMiddlewareAllocs+0.01 {
		missed = append(missed, "allocs")
	}
	if !shadowWithin(enforce, shadow) {
		missed = append(missed, "shadow")
	}
	if len(missed) > 0 {
		return "**no** (" + strings.Join(missed, ", ") + ")"
	}
	return yesNo(true)
}

// httprateWindow is a window longer than making n keys in httprate takes
// (about a microsecond each), so that none rolls over while they are made.
func httprateWindow(n int) time.Duration {
	return max(200*time.Millisecond, time.Duration(n)*3*time.Microsecond)
}

func perSec(m micro) string {
	if !m.ok {
		return "error"
	}
	return fmt.Sprintf("%s (%.1fM/s, %s allocs/op)", formatNs(m.ns), 1e3/m.ns, formatCount(m.allocs))
}

func formatBytes(x float64) string {
	switch {
	case x >= 1<<20:
		return fmt.Sprintf("%.1f MiB", x/(1<<20))
	case x >= 1<<10:
		return fmt.Sprintf("%.0f KiB", x/(1<<10))
	}
	return fmt.Sprintf("%.0f B", x)
}
