package sluiceprom_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/metricsrc/metricsrctest"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/sluiceprom"
)

// A Transport's series after the timeline of metricsrctest.Send: a.test
// retried after its 429's pause, a 404 from b.test, and c.test's 503
// asking for longer than the cap of a minute, handed back with c.test
// paused for the minute; no host is a label.
func TestATransportIsScrapedExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, err := metricsrctest.NewTransport()
		must(t, err)
		must(t, metricsrctest.Send(tr))
		c, err := sluiceprom.NewCollector(sluiceprom.Transport("api", tr.Stats))
		must(t, err)
		compare(t, c, `
# HELP sluice_transport_attempts_total Requests sent through the base RoundTripper, retries included.
# TYPE sluice_transport_attempts_total counter
sluice_transport_attempts_total{name="api"} 4
# HELP sluice_transport_breaker_rejected_total Attempts the circuit breaker refused, never sent.
# TYPE sluice_transport_breaker_rejected_total counter
sluice_transport_breaker_rejected_total{name="api"} 0
# HELP sluice_transport_paced_total Attempts that waited for their host's pause, the limiter or their host's pool.
# TYPE sluice_transport_paced_total counter
sluice_transport_paced_total{name="api"} 0
# HELP sluice_transport_paused_hosts Hosts paused now.
# TYPE sluice_transport_paused_hosts gauge
sluice_transport_paused_hosts{name="api"} 1
# HELP sluice_transport_pauses_total Pauses of a host started, by the status that asked.
# TYPE sluice_transport_pauses_total counter
sluice_transport_pauses_total{name="api",reason="429"} 1
sluice_transport_pauses_total{name="api",reason="503"} 1
sluice_transport_pauses_total{name="api",reason="other"} 0
# HELP sluice_transport_refused_retries_total Retries the retry budget refused.
# TYPE sluice_transport_refused_retries_total counter
sluice_transport_refused_retries_total{name="api"} 0
# HELP sluice_transport_requests_total RoundTrip calls since the Transport was made.
# TYPE sluice_transport_requests_total counter
sluice_transport_requests_total{name="api"} 3
# HELP sluice_transport_responses_total Responses received, retried ones included, by class.
# TYPE sluice_transport_responses_total counter
sluice_transport_responses_total{class="1xx",name="api"} 0
sluice_transport_responses_total{class="2xx",name="api"} 1
sluice_transport_responses_total{class="3xx",name="api"} 0
sluice_transport_responses_total{class="4xx",name="api"} 2
sluice_transport_responses_total{class="5xx",name="api"} 1
sluice_transport_responses_total{class="other",name="api"} 0
# HELP sluice_transport_retries_total Retries decided.
# TYPE sluice_transport_retries_total counter
sluice_transport_retries_total{name="api"} 1
`)
		time.Sleep(time.Minute) // c.test's pause has passed
		compare(t, c, `
# HELP sluice_transport_paused_hosts Hosts paused now.
# TYPE sluice_transport_paused_hosts gauge
sluice_transport_paused_hosts{name="api"} 0
`, "sluice_transport_paused_hosts")
	})
}

// A Transport source needs a name and a stats function.
func TestATransportSourceNeedsANameAndStats(t *testing.T) {
	for name, src := range map[string]sluiceprom.Source{
		"no name":  sluiceprom.Transport("", func() httplimit.TransportStats { return httplimit.TransportStats{} }),
		"no stats": sluiceprom.Transport("api", nil),
	} {
		if _, err := sluiceprom.NewCollector(src); !errors.Is(err, permits.ErrInvalidConfig) {
			t.Errorf("%s: %v, want an error matching permits.ErrInvalidConfig", name, err)
		}
	}
}
