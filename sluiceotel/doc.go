// Package sluiceotel reports what sluice's limiters, pools, breakers,
// retry budgets and HTTP Transports count as OpenTelemetry metrics.
//
// It adds nothing to the hot path: every limiter already keeps its counters
// (permits.Stats), and Register reads them with one callback, at collection
// time only, through asynchronous instruments (observable counters, gauges
// and up-down counters). Between two collections sluice runs exactly as
// without this package; a collection costs one Stats call per source and
// a few observations (see BenchmarkCollect and docs/observability.md).
//
//	reg, err := sluiceotel.Register(meter,
//		sluiceotel.Limiter("api", lim.Stats, sluiceotel.Algorithm("GCRA")),
//		sluiceotel.Keyed("per-ip", perIP.Stats),
//		sluiceotel.Pool("db", pool.Stats),
//		sluiceotel.Breaker(br.Snapshot),
//		sluiceotel.Budget(retries.Stats),
//		sluiceotel.Transport("llm-api", tr.Stats),
//	)
//	if err != nil {
//		return err // a nil stats function, an empty or repeated name
//	}
//	defer reg.Unregister()
//
// A source is a method value: the Stats (or Snapshot) method of the value
// to observe. A limiter whose Stats returns a struct that embeds
// permits.Stats (redislimit.Limiter, Keyed and Window) is observed through
// a function that returns that field:
//
//	sluiceotel.Limiter("shared", func() permits.Stats { return rl.Stats().Stats })
//
// How long granted Acquires waited is a histogram, which the metric API
// cannot observe asynchronously. A limiter made with a
// permits.WaitHistogram as its observer (actor.WithObserver(h)) is read at
// collection by a WaitProducer, given to the SDK's reader
// (sdkmetric.WithProducer): a few nanoseconds per Acquire. A WaitRecorder
// is an observer that records each wait into a synchronous histogram
// instead: it needs only the API, but costs the SDK's aggregation on every
// Acquire (BenchmarkWaited).
//
// The metrics, their instruments, units and attributes are listed in
// docs/observability.md; package sluiceprom exports the same ones to
// Prometheus directly.
package sluiceotel
