package sluiceprom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/internal/metricsrc"
)

// A Collector is a prometheus.Collector of sluice's metrics for a fixed
// set of sources: register it with a prometheus.Registerer, unregister it
// to stop. Several Collectors register side by side in one registry, as
// long as their sources' names differ. It is safe for concurrent use.
type Collector struct {
	descs   []*prometheus.Desc
	collect []func(chan<- prometheus.Metric)
}

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
	if err := check(sources); err != nil {
		return nil, err
	}
	c := &Collector{}
	for i := range sources {
		descs, collect := sources[i].bind(&sources[i])
		c.descs = append(c.descs, descs...)
		c.collect = append(c.collect, collect)
	}
	return c, nil
}

// Describe sends the descriptors of every metric the Collector sends.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads every source once and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, collect := range c.collect {
		collect(ch)
	}
}

func check(sources []Source) error {
	ids := make([]metricsrc.Ident, len(sources))
	for i, s := range sources {
		ids[i] = metricsrc.Ident{Kind: s.kind, Name: s.name, Err: s.err, Made: s.bind != nil}
	}
	return metricsrc.Check("sluiceprom", "NewCollector", ids)
}
