// Package sluiceprom exports what sluice's limiters, pools, breakers,
// retry budgets and HTTP Transports count to Prometheus, as a prometheus.Collector.
//
// It adds nothing to the hot path: every limiter already keeps its
// counters (permits.Stats), and the Collector reads them when Prometheus
// scrapes, and never otherwise (see BenchmarkCollect and
// docs/observability.md).
//
//	c, err := sluiceprom.NewCollector(
//		sluiceprom.Limiter("api", lim.Stats, sluiceprom.Algorithm("GCRA")),
//		sluiceprom.Keyed("per-ip", perIP.Stats),
//		sluiceprom.Pool("db", pool.Stats),
//		sluiceprom.Breaker(br.Snapshot),
//		sluiceprom.Budget(retries.Stats),
//		sluiceprom.Transport("llm-api", tr.Stats),
//	)
//	if err != nil {
//		return err // a nil stats function, an empty or repeated name
//	}
//	prometheus.MustRegister(c)
//
// A source is a method value: the Stats (or Snapshot) method of the value
// to observe. A limiter whose Stats returns a struct that embeds
// permits.Stats (redislimit.Limiter, Keyed and Window) is observed through
// a function that returns that field:
//
//	sluiceprom.Limiter("shared", func() permits.Stats { return rl.Stats().Stats })
//
// A limiter made with a permits.WaitHistogram as its observer
// (actor.WithObserver(h), keyed.WithObserver(h)) also reports how long its
// granted Acquires waited, as the histogram sluice_limiter_wait_seconds:
//
//	sluiceprom.Limiter("api", lim.Stats, sluiceprom.Waits(h))
//
// The metrics are those of package sluiceotel under Prometheus names
// (sluice_limiter_granted_total, sluice_breaker_state...); the table is in
// docs/observability.md.
package sluiceprom
