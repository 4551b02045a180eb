package main

import (
	"fmt"
	"io"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/demoapi"
)

// print writes the summary.
func (r *result) print(w io.Writer, cfg config) {
	secs := r.elapsed.Seconds()
	a := r.api
	pr := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	pr("")
	pr("sluice apiclient: %d jobs, %d workers (conc pool), httplimit.Transport over permits.All(requests, tokens, pool)", cfg.jobs, cfg.workers)
	pr("")
	pr("  the API allows   %d requests in any 1 s, %s tokens in any %v (%s/min), %d at once;",
		cfg.rps, demoapi.Grouped(cfg.tokenLimit()), time.Duration(cfg.tokenWindow), demoapi.Grouped(cfg.tpm), cfg.concurrency)
	pr("                   charges prompt + max_tokens on arrival, the real usage once it answers")
	if cfg.overloadFor > 0 {
		pr("                   overloaded from +%.1fs to +%.1fs: 429 with Retry-After: %d",
			time.Duration(cfg.overloadAt).Seconds(), time.Duration(cfg.overloadAt+cfg.overloadFor).Seconds(), demoapi.Seconds(time.Duration(cfg.overloadRetry)))
	}
	settle := "settles it with the usage the API returns"
	if !cfg.settle {
		settle = "never settles it"
	}
	pr("  the client uses  %.2f requests/s, %s tokens in any %v, a pool of %d  (margin %d%%);",
		rate(cfg.clientRequests()), demoapi.Grouped(cfg.tokenLimit()), cfg.clientTokens().Per.Round(time.Millisecond), cfg.concurrency, cfg.margin)
	pr("                   acquires each job's estimate, %s", settle)
	pr("")
	pr("  done in          %.1fs", secs)
	pr("  jobs done        %d / %d", r.done, len(r.jobs))
	demoapi.PrintResults(pr, demoapi.Outcome{
		Stats: a, Failed: r.failed, Overload: cfg.overloadFor > 0,
		QuotaUsed: r.quotaUsed, RequestUse: r.requestUse, Steady: r.steady,
		TokenLimit: cfg.tokenLimit(), RPS: cfg.rps,
		Elapsed: r.elapsed, WaitP50: r.waitP50, WaitP99: r.waitP99,
	})
	t := r.transport
	pr("  transport        %d attempts for %d requests, %d retries, %d pauses, %d settled",
		t.Attempts, t.Requests, t.Retries, t.Pauses, t.Settled)
	if r.overtakes == 0 {
		pr("  FIFO             kept: no job was sent ahead of one that had waited %v longer", fifoSlack)
	} else {
		pr("  FIFO             broken: %d jobs sent ahead of one that had waited %v longer", r.overtakes, fifoSlack)
	}
}

func rate(r algorithms.Rate) float64 { return float64(r.Count) / r.Per.Seconds() }
