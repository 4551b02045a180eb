package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/internal/demoapi"
)

// serveAndRun serves the API and /metrics on loopback, runs the demo
// against them, and prints its summary (and writes its chart).
func serveAndRun(ctx context.Context, cfg config, stdout io.Writer) error {
	d, err := newDemo(cfg)
	if err != nil {
		return err
	}
	defer d.lim.Close()
	api := httptest.NewServer(d.api)
	defer api.Close()
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", d.metrics())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() { _ = srv.Close(); <-served }()

	metricsURL := "http://" + ln.Addr().String() + "/metrics"
	fmt.Fprintf(stdout, "serving %s for %v\n", metricsURL, cfg.length)
	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	defer transport.CloseIdleConnections()
	samples, err := d.run(ctx, &http.Client{Transport: transport}, api.URL, metricsURL)
	if err != nil {
		return err
	}
	printSummary(stdout, samples, d.api.Snapshot(), d.failed.Load())
	if cfg.chart == "" {
		return nil
	}
	return writeChartFile(cfg.chart, cfg, samples)
}

// dashboard is the panels of a run, each the query a dashboard would run
// on the scraped series.
func dashboard(cfg config, samples []sample) []panel {
	w := promRange(cfg.window)
	granted := func(s sample) float64 { return s.granted }
	rejected := func(s sample) float64 { return s.rejected }
	return []panel{
		{"admitted per second", "sum by (name) (rate(sluice_limiter_granted_total[" + w + "]))",
			rates(samples, cfg.window, granted)},
		{"denied per second", "sum by (name) (rate(sluice_limiter_rejected_total[" + w + "]))",
			rates(samples, cfg.window, rejected)},
		{"waiting", "sum by (name) (sluice_limiter_waiting)",
			gauges(samples, func(s sample) float64 { return s.waiting })},
		{"99th percentile of the wait, seconds",
			"histogram_quantile(0.99, sum by (le) (rate(sluice_limiter_wait_seconds_bucket[" + w + "])))",
			quantiles(samples, cfg.window, 0.99)},
	}
}

// promRange is d as PromQL writes a range: "1s", "500ms".
func promRange(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

func writeChartFile(path string, cfg config, samples []sample) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("GCRA %d/s, burst %d, max wait %v: %d/s offered, %d/s in the shaded storm",
		cfg.rate, cfg.burst, cfg.maxWait, cfg.calm, cfg.storm)
	err = writeChart(f, title, cfg.length, dashboard(cfg, samples))
	return errors.Join(err, f.Close())
}

func printSummary(w io.Writer, samples []sample, api demoapi.Stats, failed int64) {
	last := samples[len(samples)-1]
	fmt.Fprintf(w, "admitted %.0f, denied %.0f (sluice_limiter_granted_total, _rejected_total)\n", last.granted, last.rejected)
	fmt.Fprintf(w, "the API accepted %d, refused %d for its quota; %d calls failed\n", api.Accepted, api.QuotaRefused, failed)
	fmt.Fprintf(w, "waits: p50 %.3fs, p99 %.3fs over the run (histogram_quantile of sluice_limiter_wait_seconds)\n",
		quantile(0.5, last.buckets), quantile(0.99, last.buckets))
	fmt.Fprintf(w, "%d scrapes of /metrics\n", len(samples))
}
