package bench_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bench/internal/scenario"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// BenchmarkRedis measures one decision on a shared limit, per subject and
// number of callers, against a redis-server it starts (skipped without
// one; run `go run ./cmd/compare -only redis` for the table with ratios).
//
//	go test -run '^$' -bench Redis -count 5 . | benchstat /dev/stdin
func BenchmarkRedis(b *testing.B) {
	s := redistest.Test(b)
	c := s.Client(b)
	for _, callers := range []int{1, 16, 64} {
		for _, sub := range scenario.RedisSubjects(1) {
			b.Run(fmt.Sprintf("%s/callers=%d", sub.Name, callers), func(b *testing.B) {
				decide, stop, err := sub.New(c, "bench:"+strconv.Itoa(callers)+":")
				if err != nil {
					b.Fatal(err)
				}
				defer stop()
				if callers == 1 {
					ctx := context.Background()
					for b.Loop() {
						if err := decide(ctx, "k"); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				// RunParallel runs parallelism × GOMAXPROCS goroutines.
				b.SetParallelism(max(callers/runtime.GOMAXPROCS(0), 1))
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					for pb.Next() {
						if err := decide(ctx, "k"); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// TestRedisScenariosRun runs every subject briefly on one key and on many,
// and checks what the comparison relies on: every decision granted, the
// server's count of script calls, and batching under concurrency.
func TestRedisScenariosRun(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	for _, spec := range []scenario.RedisSpec{{Callers: 16, Keys: 1, Run: 50 * time.Millisecond}, {Callers: 8, Keys: 100, Run: 50 * time.Millisecond}} {
		for i, sub := range scenario.RedisSubjects(spec.Keys) {
			res, err := scenario.RunRedis(c, sub, spec, i)
			if err != nil {
				t.Fatalf("%s: %v", sub.Name, err)
			}
			if res.Decisions == 0 || res.P50 <= 0 || res.P99 < res.P50 {
				t.Errorf("%s: %+v", sub.Name, res)
			}
			cpd := res.CallsPerDecision()
			switch {
			case sub.Name == "sluice redislimit" && spec.Keys == 1 && cpd >= 1:
				t.Errorf("%s on one key with %d callers: %.3f script calls per decision, want fewer than one", sub.Name, spec.Callers, cpd)
			case sub.Name != "sluice redislimit" && (cpd < 0.99 || cpd > 1.05):
				t.Errorf("%s: %.3f script calls per decision, want one", sub.Name, cpd)
			}
		}
	}
}

// TestRedisAlternatingRun runs the one-caller comparison briefly: every
// subject gets turns and its own time, and makes one script call per
// decision (a lone caller of sluice's goes the direct path).
func TestRedisAlternatingRun(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	subjects := scenario.RedisSubjects(1)
	spec := scenario.RedisSpec{Callers: 1, Keys: 1, Run: 30 * time.Millisecond}
	all, err := scenario.RunRedisAlternating(c, subjects, spec, 0)
	if err != nil {
		t.Fatal(err)
	}
	var total time.Duration
	for i, res := range all {
		if res.Decisions < scenario.AlternateBlock || res.P50 <= 0 || res.P99 < res.P50 || res.Wall <= 0 {
			t.Errorf("%s: %+v", subjects[i].Name, res)
		}
		if cpd := res.CallsPerDecision(); cpd < 0.99 || cpd > 1.05 {
			t.Errorf("%s: %.3f script calls per decision, want one", subjects[i].Name, cpd)
		}
		total += res.Wall
	}
	// The loop runs for Run per subject; the time between decisions is not
	// any subject's, so their own times add up to most of it, not all.
	if want := spec.Run * time.Duration(len(subjects)) / 2; total < want {
		t.Errorf("the subjects' own times add up to %v, want at least %v", total, want)
	}
}

// TestRedisTurnsRun runs every subject in turns with many callers: each
// gets its share of time and its own count of script calls.
func TestRedisTurnsRun(t *testing.T) {
	s := redistest.Test(t)
	c := s.Client(t)
	subjects := scenario.RedisSubjects(1)
	spec := scenario.RedisSpec{Callers: 8, Keys: 1, Run: 60 * time.Millisecond}
	all, err := scenario.RunRedisTurns(c, subjects, spec, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range all {
		if res.Decisions == 0 || res.P50 <= 0 || res.P99 < res.P50 || res.Wall < spec.Run {
			t.Errorf("%s: %+v", subjects[i].Name, res)
		}
		cpd := res.CallsPerDecision()
		switch name := subjects[i].Name; {
		case name == "sluice redislimit" && cpd >= 1:
			t.Errorf("%s with %d callers: %.3f script calls per decision, want fewer than one", name, spec.Callers, cpd)
		case name != "sluice redislimit" && (cpd < 0.99 || cpd > 1.05):
			t.Errorf("%s: %.3f script calls per decision, want one", name, cpd)
		}
	}
}
