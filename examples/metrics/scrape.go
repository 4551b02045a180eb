package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// A sample is one scrape of the limiter's series.
type sample struct {
	at                         time.Duration // since the run began
	granted, rejected, waiting float64
	buckets                    []bucket // sluice_limiter_wait_seconds, cumulative, +Inf last
}

// A bucket is one of a histogram's cumulative buckets: the waits of at
// most le seconds.
type bucket struct{ le, count float64 }

// scrapeUntil scrapes url every interval until done is closed, and once
// more then, as a Prometheus scraping the demo would.
func scrapeUntil(ctx context.Context, client *http.Client, url string, start time.Time, every time.Duration, done <-chan struct{}) ([]sample, error) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var samples []sample
	for {
		var last bool
		select {
		case <-tick.C:
		case <-done:
			last = true
		}
		s, err := scrape(ctx, client, url)
		if err != nil {
			<-done
			return samples, err
		}
		s.at = time.Since(start)
		samples = append(samples, s)
		if last {
			return samples, nil
		}
	}
}

// scrape reads the limiter's series from url's exposition.
func scrape(ctx context.Context, client *http.Client, url string) (sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return sample{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return sample{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return sample{}, fmt.Errorf("GET %s: %w", url, err)
	}
	return sampleOf(families)
}

// series are the families a sample reads, in sampleOf's order.
var series = [...]string{"sluice_limiter_granted_total", "sluice_limiter_rejected_total",
	"sluice_limiter_waiting", "sluice_limiter_wait_seconds"}

func sampleOf(families map[string]*dto.MetricFamily) (sample, error) {
	var m [len(series)]*dto.Metric
	for i, name := range series {
		f := families[name]
		if f == nil || len(f.GetMetric()) != 1 {
			return sample{}, fmt.Errorf("the exposition has not one series of %s", name)
		}
		m[i] = f.GetMetric()[0]
	}
	s := sample{granted: m[0].GetCounter().GetValue(), rejected: m[1].GetCounter().GetValue(),
		waiting: m[2].GetGauge().GetValue()}
	h := m[3].GetHistogram()
	for _, b := range h.GetBucket() {
		s.buckets = append(s.buckets, bucket{b.GetUpperBound(), float64(b.GetCumulativeCount())})
	}
	s.buckets = append(s.buckets, bucket{math.Inf(1), float64(h.GetSampleCount())})
	return s, nil
}
