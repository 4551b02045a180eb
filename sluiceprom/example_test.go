package sluiceprom_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/sluiceprom"
)

// A service's /metrics with a limiter's series, scraped over loopback as
// Prometheus would.
func ExampleNewCollector() {
	gcra, err := algorithms.NewGCRA(algorithms.PerMinute(60), 3)
	if err != nil {
		panic(err)
	}
	lim := actor.MustNew(gcra, actor.WithName("api"))
	defer lim.Close()
	c, err := sluiceprom.NewCollector(sluiceprom.Limiter("api", lim.Stats, sluiceprom.Algorithm("GCRA")))
	if err != nil {
		panic(err)
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(c)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux) // 127.0.0.1:0
	defer srv.Close()

	for range 5 {
		lim.Allow() // the burst of 3 is granted, the 2 others refused
	}

	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "sluice_") {
			fmt.Println(lines.Text())
		}
	}
	// Output:
	// sluice_limiter_canceled_total{algorithm="GCRA",name="api"} 0
	// sluice_limiter_granted_total{algorithm="GCRA",name="api"} 3
	// sluice_limiter_refunded_total{algorithm="GCRA",name="api"} 0
	// sluice_limiter_rejected_total{algorithm="GCRA",name="api"} 2
	// sluice_limiter_waiting{algorithm="GCRA",name="api"} 0
}
