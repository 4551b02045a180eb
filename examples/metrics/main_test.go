package main

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// handlers is a RoundTripper that serves each request in-process, by
// path: in a synctest bubble, the demo's HTTP runs without sockets.
type handlers map[string]http.Handler

func (h handlers) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	h[r.URL.Path].ServeHTTP(rec, r)
	return rec.Result(), nil
}

// runInBubble runs the demo with its default flags in virtual time and
// returns its samples.
func runInBubble(t *testing.T) (*demo, []sample) {
	cfg, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	d, err := newDemo(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.lim.Close() })
	client := &http.Client{Transport: handlers{"/metrics": d.metrics(), "/v1/complete": d.api}}
	samples, err := d.run(t.Context(), client, "http://api", "http://api/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return d, samples
}

// during returns the points of a panel whose one-second window lies
// within [from, to): their at is in [from+1s, to].
func during(points []point, from, to time.Duration) []point {
	var out []point
	for _, p := range points {
		if p.at >= from+time.Second && p.at <= to {
			out = append(out, p)
		}
	}
	return out
}

// The dashboard of a run tells the phases apart: in the calm nothing is
// denied and nobody waits; in the storm the limiter admits no more than
// its rate and burst in any second, denies the rest, keeps waiters, and
// their 99th percentile is in the bucket of the 250 ms max wait; once
// the storm has drained (the calm's first arrivals queue behind its last
// waiters, until about 4.4 s), the calm again. The API refuses nothing.
func TestTheDashboardTellsTheStormFromTheCalm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, samples := runInBubble(t)
		p := dashboard(d.cfg, samples)
		admitted, denied, waiting, p99 := p[0].points, p[1].points, p[2].points, p[3].points
		calm := func(name string, points []point, from, to time.Duration, most float64) {
			t.Helper()
			for _, pt := range during(points, from, to) {
				if pt.v > most {
					t.Errorf("%s at %v: %v, want at most %v in the calm", name, pt.at, pt.v, most)
				}
			}
		}
		for _, span := range [][2]time.Duration{{0, 2 * time.Second}, {4*time.Second + 500*time.Millisecond, 6 * time.Second}} {
			calm("denied", denied, span[0], span[1], 0)
			calm("waiting", waiting, span[0], span[1], 0)
			calm("p99 wait", p99, span[0], span[1], 1e-6) // bucket 0: granted at once
		}
		storm := func(name string, points []point, least, most float64) {
			t.Helper()
			for _, pt := range during(points, 2*time.Second, 4*time.Second) {
				if pt.v < least || pt.v > most {
					t.Errorf("%s at %v: %v, want it in [%v, %v] in the storm", name, pt.at, pt.v, least, most)
				}
			}
		}
		storm("admitted", admitted, 1, float64(d.cfg.rate+d.cfg.burst))
		storm("denied", denied, 1, float64(d.cfg.storm))
		storm("waiting", waiting, 1, float64(d.cfg.storm))
		storm("p99 wait", p99, 0.131072, 0.262144)

		last := samples[len(samples)-1]
		// 20 arrivals 100 ms apart, 121 at 1/60 s (truncated to the ns),
		// 20 again.
		if n := last.granted + last.rejected; n != 161 {
			t.Errorf("granted %v + rejected %v = %v, want the 161 arrivals", last.granted, last.rejected, n)
		}
		if api := d.api.Snapshot(); api.QuotaRefused != 0 || d.failed.Load() != 0 {
			t.Errorf("the API refused %d for its quota, %d calls failed; want none", api.QuotaRefused, d.failed.Load())
		}
	})
}

// The command serves /metrics on loopback, scrapes it there and writes
// its chart: four panels, each with its query.
func TestTheCommandServesItsMetricsAndWritesTheChart(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "img", "dashboard.svg")
	var stdout, stderr bytes.Buffer
	code := realMain(t.Context(), []string{"-for", "600ms", "-chart", chart}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"serving http://127.0.0.1:", "refused 0 for its quota; 0 calls failed", "scrapes of /metrics"} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary has no %q:\n%s", want, out)
		}
	}
	svg, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(svg, []byte("<svg")) || bytes.Count(svg, []byte("<polyline")) != 4 ||
		!bytes.Contains(svg, []byte("rate(sluice_limiter_rejected_total[1s])")) {
		t.Errorf("the chart is not four panels with their queries:\n%.400s", svg)
	}
}

// Bad flags exit 2 with the reason; -h exits 0.
func TestBadFlagsExitTwo(t *testing.T) {
	for args, want := range map[string]int{"-rate 0": 2, "-for -1s": 2, "-storm 100000": 2, "-nope": 2, "-h": 0} {
		var stderr bytes.Buffer
		if code := realMain(t.Context(), strings.Fields(args), io.Discard, &stderr); code != want || stderr.Len() == 0 {
			t.Errorf("%s: exit %d, stderr %q; want %d and a reason", args, code, stderr.String(), want)
		}
	}
}

// quantile is histogram_quantile: linear within the bucket of the rank,
// from 0 in the first, the last finite bound for a rank in +Inf, NaN
// without observations.
func TestQuantileInterpolatesAsHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	two := []bucket{{0.1, 10}, {0.2, 20}, {inf, 20}}
	for _, c := range []struct {
		q       float64
		buckets []bucket
		want    float64
	}{
		{0.5, two, 0.1},
		{0.75, two, 0.15},
		{0.25, two, 0.05},
		{0.9, []bucket{{0.1, 10}, {inf, 20}}, 0.1},
	} {
		if got := quantile(c.q, c.buckets); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile(%v, %v) = %v, want %v", c.q, c.buckets, got, c.want)
		}
	}
	if got := quantile(0.5, []bucket{{0.1, 0}, {inf, 0}}); !math.IsNaN(got) {
		t.Errorf("quantile of no observations = %v, want NaN", got)
	}
}
