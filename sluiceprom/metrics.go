package sluiceprom

import "github.com/prometheus/client_golang/prometheus"

// The label names. name is the one the user gave the limiter (or the
// breaker's WithName, the budget's WithName): a bounded set, never a key
// of a keyed limiter.
const (
	NameLabel      = "name"
	AlgorithmLabel = "algorithm"
	StateLabel     = "state"  // of sluice_breaker_state
	ReasonLabel    = "reason" // of sluice_transport_pauses_total: 429, 503, other
	ClassLabel     = "class"  // of sluice_transport_responses_total: 1xx...5xx, other
)

// A metric is a name and its help. The names are sluiceotel's in
// Prometheus's style (metricsrc.Metric.PromName): underscores, _total on
// counters, no unit suffix for counts of things.
type metric struct{ name, help string }

// waitSeconds is the one metric not read from a Kind: a histogram, read
// from the permits.WaitHistogram that Waits gives.
var waitSeconds = metric{"sluice_limiter_wait_seconds", "Time each granted Acquire waited, 0 for one granted at once."}

// descs makes the descriptors of one source, its labels constant: each
// source has descriptors of its own, so that two Collectors register side
// by side in one registry, and the registry refuses two sources of one
// name as it refuses any duplicate series. A scrape then builds no label
// pairs.
type descs struct {
	labels prometheus.Labels
	all    []*prometheus.Desc
}

func (d *descs) of(m metric, variable ...string) *prometheus.Desc {
	desc := prometheus.NewDesc(m.name, m.help, variable, d.labels)
	d.all = append(d.all, desc)
	return desc
}
