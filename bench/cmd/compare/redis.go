package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/bench/internal/scenario"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// Goals of the shared limit, as issue 11 states them.
const (
	goalRedisThroughput = 7.0 // sluice ÷ redis_rate, decisions/s at 64 callers on one key
	goalRedisCalls      = 0.1 // script calls per decision under load (64 callers, one key)
	goalRedisP50        = 1.1 // sluice ÷ redis_rate, p50 latency at one caller
)

// redisTurns is how many turns each subject takes within one run with
// many callers (scenario.RunRedisTurns).
const redisTurns = 4

// redisCases are the workloads: callers on one key, and over many keys.
var redisCases = []scenario.RedisSpec{
	{Callers: 1, Keys: 1},
	{Callers: 16, Keys: 1},
	{Callers: 64, Keys: 1},
	{Callers: 64, Keys: 1000},
}

// redisStats collects the runs of one subject on one workload.
type redisStats struct{ perSec, p50, p99, calls []float64 }

func (s *redisStats) add(r scenario.RedisResult) {
	s.perSec = append(s.perSec, r.PerSecond())
	s.p50 = append(s.p50, float64(r.P50))
	s.p99 = append(s.p99, float64(r.P99))
	s.calls = append(s.calls, r.CallsPerDecision())
}

func redisSection(r *runner, b *strings.Builder) {
	b.WriteString("## Shared limit on Redis\n\n")
	dir, err := os.MkdirTemp("", "sluice-compare-redis-")
	if err != nil {
		r.fail(fmt.Errorf("redis: %w", err))
		return
	}
	defer os.RemoveAll(dir)
	s, err := redistest.Start(dir)
	if errors.Is(err, redistest.ErrNotFound) {
		b.WriteString("redis-server not found: section skipped\n\n")
		r.logf("redis-server not found: section skipped")
		return
	}
	if err != nil {
		r.fail(fmt.Errorf("redis: %w", err))
		return
	}
	defer s.Close()
	c := s.NewClient()
	defer c.Close()

	run := 5 * r.cfg.d
	fmt.Fprintf(b, "Decisions per second and the latency of one decision as its caller sees it, with callers looping on one key (or on a key chosen at random among 1 000), "+
		"against a redis-server this run started on loopback (go-redis v9 client, default options, shared by every subject). "+
		"Every decision is granted (%v, burst %d): what is measured is the cost of deciding, not the limit. "+
		"sluice is `redislimit.New` (one key) or `redislimit.NewKeyed` (many) and `Acquire(context.Background(), 1)`; "+
		"redis_rate is go-redis/redis_rate v10 `Allow`; *one call per decision* is an integer GCRA script called once per decision from the caller's goroutine, the best a limiter without an owner to batch for it can do. "+
		"*Script calls per decision*: EVAL and EVALSHA the server counted (INFO commandstats) over the decisions. %v per run; medians of %d runs, subjects interleaved. "+
		"Within a run the subjects take turns, so that each meets the same moments of a machine whose speed drifts: with many callers, %d turns each of %v, in rotation; "+
		"at one caller, in one loop, %d decisions each (decisions/s there is over each subject's own time, and its script calls are counted over a short pass of it alone). "+
		"Goals: ≥ %.0f× redis_rate at 64 callers on one key; ≤ %.1f script calls per decision there; p50 at one caller ≤ %.1f× redis_rate. "+
		"The fourth goal, no decision above b + ⌊r·d⌋ across processes, is checked by `go test -run TestSharedBoundAcrossProcesses` in redislimit.\n\n",
		scenario.RedisRate, scenario.RedisBurst, run, r.cfg.count, redisTurns, run/redisTurns, scenario.AlternateBlock, goalRedisThroughput, goalRedisCalls, goalRedisP50)
	t := table{header: []string{"callers", "keys", "library", "decisions/s", "p50", "p99", "script calls per decision", "decisions/s ÷ redis_rate", "p50 ÷ redis_rate"}}
	goals := table{header: []string{"goal", "measured", "met"}}
	for _, spec := range redisCases {
		spec.Run = run
		subjects := scenario.RedisSubjects(spec.Keys)
		stats := make([]redisStats, len(subjects))
		failed := make([]bool, len(subjects))
		for rep := range r.cfg.count {
			if spec.Callers == 1 {
				all, err := scenario.RunRedisAlternating(c, subjects, spec, rep)
				if err != nil {
					r.fail(fmt.Errorf("redis, 1 caller: %w", err))
					for i := range failed {
						failed[i] = true
					}
					break
				}
				for i, res := range all {
					r.logf("redis, 1 caller, %d key, run %d/%d: %s %.0f/s, p50 %v, p99 %v, %.3f calls per decision",
						spec.Keys, rep+1, r.cfg.count, subjects[i].Name, res.PerSecond(), res.P50, res.P99, res.CallsPerDecision())
					stats[i].add(res)
				}
				continue
			}
			all, err := scenario.RunRedisTurns(c, subjects, spec, rep, redisTurns)
			if err != nil {
				r.fail(fmt.Errorf("redis, %d callers, %d keys: %w", spec.Callers, spec.Keys, err))
				for i := range failed {
					failed[i] = true
				}
				break
			}
			for i, res := range all {
				r.logf("redis, %d callers, %d keys, run %d/%d: %s %.0f/s, p50 %v, p99 %v, %.3f calls per decision",
					spec.Callers, spec.Keys, rep+1, r.cfg.count, subjects[i].Name, res.PerSecond(), res.P50, res.P99, res.CallsPerDecision())
				stats[i].add(res)
			}
		}
		ref := slices.IndexFunc(subjects, func(s scenario.RedisSubject) bool { return s.Name == "redis_rate" })
		var refPerSec, refP50 float64
		if !failed[ref] {
			refPerSec, refP50 = median(stats[ref].perSec), median(stats[ref].p50)
		}
		for i, sub := range subjects {
			if failed[i] {
				t.add(fmt.Sprint(spec.Callers), thousands(spec.Keys), sub.Name, "error", "", "", "", "", "")
				continue
			}
			st := stats[i]
			perSec, p50 := median(st.perSec), median(st.p50)
			t.add(fmt.Sprint(spec.Callers), thousands(spec.Keys), sub.Name, thousands(int(perSec)),
				formatDuration(time.Duration(p50)), formatDuration(time.Duration(median(st.p99))),
				fmt.Sprintf("%.3f", median(st.calls)), ratio(perSec, refPerSec), ratio(p50, refP50))
		}
		sl := 0 // sluice comes first
		if failed[sl] || failed[ref] {
			continue
		}
		perSec, calls, p50 := median(stats[sl].perSec), median(stats[sl].calls), median(stats[sl].p50)
		switch {
		case spec.Callers == 64 && spec.Keys == 1:
			goals.add(fmt.Sprintf("decisions/s at 64 callers on one key ≥ %.0f× redis_rate", goalRedisThroughput),
				fmt.Sprintf("%.2f× (%s vs %s)", perSec/refPerSec, thousands(int(perSec)), thousands(int(refPerSec))), yesNo(perSec >= goalRedisThroughput*refPerSec))
			goals.add(fmt.Sprintf("script calls per decision at 64 callers on one key ≤ %.1f", goalRedisCalls),
				fmt.Sprintf("%.3f", calls), yesNo(calls <= goalRedisCalls))
		case spec.Callers == 1:
			goals.add(fmt.Sprintf("p50 at one caller ≤ %.1f× redis_rate", goalRedisP50),
				fmt.Sprintf("%.2f× (%s vs %s)", p50/refP50, formatDuration(time.Duration(p50)), formatDuration(time.Duration(refP50))), yesNo(p50 <= goalRedisP50*refP50))
		}
	}
	t.write(b)
	b.WriteString("sluice against its goals:\n\n")
	goals.write(b)
}
