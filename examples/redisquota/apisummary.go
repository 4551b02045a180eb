package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/demoapi"
)

// print writes the summary, with the goals of examples/apiclient's.
func (r *apiResult) print(w io.Writer) {
	cfg, a := r.cfg, r.api
	secs := r.elapsed.Seconds()
	pr := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	var workers, pools, done []string
	for i, p := range r.procs {
		workers = append(workers, fmt.Sprint(share(cfg.workers, cfg.processes, i)))
		pools = append(pools, fmt.Sprint(share(cfg.concurrency, cfg.processes, i)))
		n := 0
		for _, j := range p.Jobs {
			if j.Done {
				n++
			}
		}
		done = append(done, fmt.Sprint(n))
	}
	pr("")
	pr("sluice redisquota -api: %d jobs in %d processes (%s workers), each an httplimit.Transport", cfg.jobs, cfg.processes, strings.Join(workers, "+"))
	pr("                        over permits.All(tokens, requests, pool), tokens and requests shared in Redis")
	pr("")
	pr("  the API allows   %d requests in any 1 s, %s tokens in any %v (%s/min), %d at once;",
		cfg.rps, demoapi.Grouped(cfg.tokenLimit()), cfg.tokenWindow, demoapi.Grouped(cfg.tpm), cfg.concurrency)
	pr("                   charges prompt + max_tokens on arrival, the real usage once it answers")
	if cfg.overloadFor > 0 {
		pr("                   overloaded from +%.1fs to +%.1fs: 429 with Retry-After: %d",
			cfg.overloadAt.Seconds(), (cfg.overloadAt + cfg.overloadFor).Seconds(), demoapi.Seconds(cfg.overloadRetry))
	}
	pr("  Redis shares     GCRA %.2f requests/s, burst %d (at most %d in any %v);",
		perSecond(cfg.requests()), cfg.requestBurst(), cfg.rps, cfg.requests().Per.Round(time.Millisecond))
	pr("                   sliding window of %s tokens in any %v  (margin %d%%)",
		demoapi.Grouped(cfg.tokens().Count), cfg.tokens().Per.Round(time.Millisecond), cfg.margin)
	pr("  each process     a pool of %s; acquires each job's estimate, and settles it with the usage the API", strings.Join(pools, ", "))
	pr("                   reports: the shared window counts what each job really used; a 429 pauses it")
	pr("")
	pr("  done in          %.1fs", secs)
	pr("  jobs done        %d / %d  (%s per process)", r.done, len(r.jobs), strings.Join(done, ", "))
	demoapi.PrintResults(pr, demoapi.Outcome{
		Stats: a, Failed: r.failed, Overload: cfg.overloadFor > 0,
		QuotaUsed: r.quotaUsed, RequestUse: r.requestUse, Steady: r.steady,
		TokenLimit: cfg.tokenLimit(), RPS: cfg.rps,
		Elapsed: r.elapsed, WaitP50: r.waitP50, WaitP99: r.waitP99,
	})
	t := r.transport
	pr("  transports       %d attempts for %d requests, %d retries, %d pauses (in all)", t.Attempts, t.Requests, t.Retries, t.Pauses)
	if r.overtakes == 0 {
		pr("  FIFO             kept in each process: no job was sent ahead of one that had waited %v longer", fifoSlack)
	} else {
		pr("  FIFO             broken: %d jobs sent ahead of one of their process that had waited %v longer", r.overtakes, fifoSlack)
	}
}

func perSecond(r algorithms.Rate) float64 { return float64(r.Count) / r.Per.Seconds() }
