package main

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/internal/demoapi"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/sluiceprom"
)

// demo is one run's parts: the limiter and its wait histogram, the
// registry that serves their series, the API.
type demo struct {
	cfg      config
	lim      *actor.Limiter
	registry *prometheus.Registry
	api      *demoapi.API
	failed   atomic.Int64 // granted calls the API did not answer 200
}

// newDemo makes the parts; in a test, inside the synctest bubble that
// runs it. Close the limiter when done.
func newDemo(cfg config) (*demo, error) {
	gcra, err := algorithms.NewGCRA(algorithms.PerSecond(cfg.rate), cfg.burst)
	if err != nil {
		return nil, err
	}
	waits := new(permits.WaitHistogram)
	lim, err := actor.New(gcra, actor.WithName("api"), actor.WithMaxWait(cfg.maxWait), actor.WithObserver(waits))
	if err != nil {
		return nil, err
	}
	c, err := sluiceprom.NewCollector(sluiceprom.Limiter("api", lim.Stats,
		sluiceprom.Algorithm("GCRA"), sluiceprom.Waits(waits)))
	if err != nil {
		lim.Close()
		return nil, err
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(c)
	// The API's own quota is the limiter's most in any second, rate +
	// burst: a client that keeps to its limiter is never refused.
	api := demoapi.New(demoapi.Config{
		RPS: int(cfg.rate + cfg.burst), TokenLimit: 1 << 40, TokenWindow: time.Second, MaxConcurrent: 1 << 20,
		Latency: cfg.latency, OverloadRetry: time.Second, Seed: 1,
	})
	return &demo{cfg: cfg, lim: lim, registry: registry, api: api}, nil
}

func (d *demo) metrics() http.Handler {
	return promhttp.HandlerFor(d.registry, promhttp.HandlerOpts{})
}

// run offers the traffic to apiURL and scrapes metricsURL every
// cfg.scrape meanwhile, through client, then once more when the last call
// was answered; it returns the samples.
func (d *demo) run(ctx context.Context, client *http.Client, apiURL, metricsURL string) ([]sample, error) {
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.offer(ctx, client, apiURL, start)
	}()
	return scrapeUntil(ctx, client, metricsURL, start, d.cfg.scrape, done)
}

// offered is the arrivals per second at an instant of the run: calm,
// storm, calm, a third each.
func (d *demo) offered(at time.Duration) int64 {
	if at >= d.cfg.length/3 && at < 2*d.cfg.length/3 {
		return d.cfg.storm
	}
	return d.cfg.calm
}

// offer starts one call at each arrival instant until cfg.length, each
// spaced from the last by the offered rate's interval (absolute
// instants: the schedule does not drift by the time a start takes), and
// returns when every call was answered.
func (d *demo) offer(ctx context.Context, client *http.Client, apiURL string, start time.Time) {
	var wg sync.WaitGroup
	defer wg.Wait()
	next := start
	for id := 0; ctx.Err() == nil; id++ {
		at := next.Sub(start)
		if at >= d.cfg.length {
			return
		}
		wg.Go(func() { d.call(ctx, client, apiURL, id) })
		next = next.Add(time.Second / time.Duration(d.offered(at)))
		time.Sleep(time.Until(next))
	}
}

// call acquires a permit, waiting at most cfg.maxWait (or denied at once),
// and calls the API with it.
func (d *demo) call(ctx context.Context, client *http.Client, apiURL string, id int) {
	if _, err := d.lim.Acquire(ctx, 1); err != nil {
		return // denied: counted by the limiter, in sluice_limiter_rejected_total
	}
	job := &demoapi.Job{ID: id, Prompt: 100, MaxTokens: 100}
	if err := job.Run(ctx, client, apiURL); err != nil {
		d.failed.Add(1)
	}
}
