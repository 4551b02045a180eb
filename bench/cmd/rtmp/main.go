package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/sluicehq/sluice/bench/internal/scenario"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

func main() {
	callers := flag.Int("c", 1, "")
	keys := flag.Int("k", 1, "")
	prof := flag.String("prof", "", "")
	only := flag.Int("only", -1, "")
	flag.Parse()
	dir, _ := os.MkdirTemp("", "rb")
	defer os.RemoveAll(dir)
	s, err := redistest.Start(dir)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	c := s.NewClient()
	defer c.Close()
	if os.Getenv("SCRIPT") != "" {
		scriptCost(c, os.Getenv("SCRIPT"))
		return
	}
	if *prof != "" {
		f, _ := os.Create(*prof)
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	sp := scenario.RedisSpec{Callers: *callers, Keys: *keys, Run: 2 * time.Second}
	for i, sub := range scenario.RedisSubjects(sp.Keys) {
		if *only >= 0 && i != *only {
			continue
		}
		r, err := scenario.RunRedis(c, sub, sp, 1)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%2d callers %4d keys %-22s %9.0f/s p50 %8v p99 %8v calls/dec %.3f\n", sp.Callers, sp.Keys, sub.Name, r.PerSecond(), r.P50, r.P99, r.CallsPerDecision())
	}
}
