// Command sluice replays traffic through sluice's rate limits on a virtual
// clock, so that an algorithm and its parameters can be chosen by looking
// at what they do rather than by guessing.
//
//	sluice simulate -limit SPEC... -traffic SPEC... [flags]
//	sluice fit -traffic SPEC... -upstream SPEC -p99 DURATION [flags]
//
// simulate offers the same arrivals to every limit, models waiting callers
// as actor.Limiter serves them (strict FIFO, each granted at its scheduled
// instant, refused at once when its predicted wait exceeds -max-wait), and
// prints a table per limit; with -charts it draws offered against admitted
// units per second and the wait distribution, as PNG and SVG. fit searches
// each algorithm's parameters for the configuration that admits the most
// while never exceeding the upstream and meeting a p99 wait goal.
//
// It is a module of its own (its plotting library stays out of sluice's
// go.mod); from the repository's root:
//
//	go run -C cmd/sluice . simulate -limit fixed:100/1m -limit gcra:100/1m,burst=10 \
//	    -traffic spike:100@59s,100@1m -duration 3m -charts out
//
// Every run is deterministic for a seed. docs/simulator.md describes the
// grammar of limits and traffic, the model and its limits.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the run failed, or fit found nothing that meets the goal
	exitUsage = 2 // the command line is wrong
)

const usage = `sluice simulates rate limits on a virtual clock.

Usage:
  sluice simulate -limit SPEC [-limit SPEC...] -traffic SPEC [-traffic SPEC...] [flags]
  sluice fit -traffic SPEC [-traffic SPEC...] -upstream SPEC -p99 DURATION [flags]
  sluice help [simulate|fit]

Limits (-limit, -upstream):
  gcra:100/s,burst=10     GCRA at 100/s with bursts of up to 10 (burst defaults to 1)
  token:50,1/s            token bucket of capacity 50 refilled at 1/s (or token:rate=1/s,capacity=50)
  leaky:2/s,40            leaky bucket of capacity 40 leaking at 2/s
  sliding:100/1m          at most 100 in any minute
  fixed:100/1m            at most 100 in each calendar minute
  100/s                   (-upstream only) the same as sliding:100/s
  sliding:10/s,per=key    any limit per key: one limit for each key of the traffic
Rates are COUNT/PERIOD: 10/s, 100/minute, 5/200ms, 3/2h.

Pools in front of a modelled downstream (-limit with -downstream):
  adaptive:vegas,floor=1,ceiling=200   an adaptive pool (aimd, vegas or gradient2, with their parameters)
  pool:100                pool of a static limit of 100
  -downstream servers=100,service=10ms±1ms,queue=10,at=30s:servers=40   the downstream, changing at 30s

Traffic (-traffic, repeat to merge):
  steady:1000/s           evenly spaced
  poisson:90/1m           random (exponential) gaps, seeded
  onoff:200/s,on=5s,off=25s   bursts
  spike:100@59s,100@1m    100 at once at 59s and at 1m
  csv:FILE                replay "time,cost" rows (seconds, 1.5s, or RFC 3339)
  log:FILE[,key=host|user|none]   replay an access log (Common/Combined Log Format)
  jsonl:FILE,time=F[,key=F][,cost=F]   replay JSON lines (RFC 3339 or Unix seconds)
Files may be gzip-compressed. Without -duration a run lasts 1m, or up to its latest
spike or file row.
Generated traffic also takes cost=N or cost=A-B, from=DURATION, until=DURATION,
and keys=N[,spread=uniform|zipf|zipf:S] (keys k1 ... kN).

Retrying callers (-retry):
  max=3,after=retry-after,jitter=full       retry a refusal after its RetryAfter
  max=3,after=exp,base=100ms,cap=10s,jitter=equal   or after an exponential back-off

Run 'sluice help simulate' or 'sluice help fit' for their flags; docs/simulator.md has the details.
`

// run is the command with its streams, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "simulate":
		return simulate(args[1:], stdout, stderr)
	case "fit":
		return fitCommand(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			switch args[1] {
			case "simulate":
				return simulate([]string{"-h"}, stdout, stderr)
			case "fit":
				return fitCommand([]string{"-h"}, stdout, stderr)
			}
			fmt.Fprintf(stderr, "sluice help: no command %q; the commands are simulate and fit\n", args[1])
			return exitUsage
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q; the commands are simulate and fit (sluice -h for help)\n", args[0])
	return exitUsage
}
