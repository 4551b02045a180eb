package sluiceprom

import "github.com/prometheus/client_golang/prometheus"

// A Collector is a prometheus.Collector of sluice's metrics for a fixed
// set of sources: register it with a prometheus.Registerer, unregister it
// to stop. It is safe for concurrent use.
type Collector struct{ sources []Source }

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Collector of sources. It fails, matching
// permits.ErrInvalidConfig, for no sources, a source whose function is
// nil, a limiter without a name, or two sources of one kind with one name
// (whose series would be one): limiters, pools and keyed limiters share
// the name label of the sluice_limiter_ metrics, so their names must
// differ; name breakers and budgets apart with their WithName.
//
// A scrape calls each source's function once, on the scraping goroutine:
// a limiter's Stats loads a few atomic counters; a breaker's Snapshot and
// a budget's Stats take their lock, as any call does.
func NewCollector(sources ...Source) (*Collector, error) {
	if len(sources) == 0 {
		return nil, invalid("NewCollector needs at least one source")
	}
	seen := make(map[[2]string]bool, len(sources))
	for _, s := range sources {
		switch id := [2]string{s.kind, s.name}; {
		case s.err != nil:
			return nil, s.err
		case s.collect == nil:
			return nil, invalid("a Source made without Limiter, Keyed, Pool, Breaker or Budget")
		case seen[id]:
			return nil, invalid("two sources of kind %s named %q: their series would be one", s.kind, s.name)
		default:
			seen[id] = true
		}
	}
	return &Collector{sources: append([]Source(nil), sources...)}, nil
}

// Describe sends the descriptors of every metric a Collector may send.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect reads every source once and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for i := range c.sources {
		c.sources[i].collect(&c.sources[i], ch)
	}
}
