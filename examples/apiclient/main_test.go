package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// inProcess serves requests by calling the API's handler directly, so that
// the client, the API and their clocks all live in one synctest bubble: no
// socket, whose goroutines would never be durably blocked.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// simulate runs the demo with args in virtual time.
func simulate(t *testing.T, args ...string) (*result, config, string) {
	t.Helper()
	cfg, err := parseFlags(args, io.Discard)
	require.NoError(t, err)
	var res *result
	var progress bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		api := newAPI(cfg)
		res, err = run(context.Background(), cfg, api, &http.Client{Transport: inProcess{api}}, "http://api.test", newProgress(&progress, false))
		require.NoError(t, err)
	})
	var out bytes.Buffer
	res.print(&out, cfg)
	return res, cfg, out.String()
}

// TestDefaultRun is the README's command in virtual time: every job done,
// no 429, 10 to 30 seconds, both rate limits binding, FIFO kept.
func TestDefaultRun(t *testing.T) {
	res, cfg, out := simulate(t)
	t.Log(out)
	assert.Equal(t, 500, res.done)
	assert.Zero(t, res.tooMany, "429s")
	assert.GreaterOrEqual(t, res.elapsed, 10*time.Second)
	assert.LessOrEqual(t, res.elapsed, 30*time.Second)
	assert.Zero(t, res.overtakes, "FIFO")
	assert.LessOrEqual(t, res.api.peakPerSecond, cfg.rps)
	assert.Greater(t, res.requestsBound, 0.1, "the request rate binds for a good part of the run")
	assert.Greater(t, res.tokensBound, 0.1, "so does the token rate")
	for _, want := range []string{"jobs done        500 / 500", "429s received    0", "FIFO             kept", "bound by         the token rate"} {
		assert.Contains(t, out, want)
	}
}

// TestZeroMarginIsExact: with no margin the client is exactly as fast as
// the API's checks allow. In virtual time there is no jitter, so it gets
// no 429, while reaching the API's request limit in some second.
func TestZeroMarginIsExact(t *testing.T) {
	res, cfg, _ := simulate(t, "-margin", "0", "-jobs", "300")
	assert.Zero(t, res.tooMany, "the API must not be stricter than the client's limits")
	assert.Equal(t, cfg.rps, res.api.peakPerSecond, "and the client reaches the limit")
}

// TestTooFastClientGets429s: the API's checks are strict enough that a
// client 10% above the quota is refused; the demo proves something.
func TestTooFastClientGets429s(t *testing.T) {
	res, _, out := simulate(t, "-margin", "-10", "-jobs", "200")
	assert.Positive(t, res.tooMany, "the API must not be more lenient than the client's limits")
	assert.Equal(t, 200, res.done, "429s are retried after Retry-After")
	assert.NotContains(t, out, "429s received    0 ")
}

// TestOnLoopback runs the command itself, with flags that make it quick,
// against a real HTTP server on loopback.
func TestOnLoopback(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{
		"-jobs", "40", "-rps", "100", "-tpm", "6000000", "-tpm-burst", "40000", "-latency", "10ms",
	}, &stdout, &stderr, false)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "jobs done        40 / 40")
	assert.Contains(t, stderr.String(), "40/40 jobs", "the last progress line")
}

func TestProgressOnATerminalRedrawsOneLine(t *testing.T) {
	_, _, _ = simulate(t, "-jobs", "5") // warm: nothing to check there
	cfg, err := parseFlags([]string{"-jobs", "20", "-progress", "100ms"}, io.Discard)
	require.NoError(t, err)
	var progress bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		api := newAPI(cfg)
		_, err := run(context.Background(), cfg, api, &http.Client{Transport: inProcess{api}}, "http://api.test", newProgress(&progress, true))
		require.NoError(t, err)
	})
	s := progress.String()
	assert.Greater(t, strings.Count(s, "\r"), 2)
	assert.Equal(t, 1, strings.Count(s, "\n"), "one line, redrawn, ended once")
	assert.True(t, strings.HasSuffix(s, "\n"))
}

func TestFlags(t *testing.T) {
	for _, bad := range [][]string{
		{"-jobs", "0"}, {"-rps", "0"}, {"-margin", "100"}, {"-min-tokens", "10", "-max-tokens", "5"},
		{"-max-tokens", "59000"}, // above the client's burst
		{"-latency", "0s"}, {"-nope"},
	} {
		_, err := parseFlags(bad, io.Discard)
		assert.Error(t, err, "%v", bad)
	}
	var stderr bytes.Buffer
	assert.Equal(t, 2, realMain(context.Background(), []string{"-jobs", "-1"}, io.Discard, &stderr, false))
	assert.Contains(t, stderr.String(), "-jobs")
	stderr.Reset()
	assert.Equal(t, 0, realMain(context.Background(), []string{"-h"}, io.Discard, &stderr, false), "-h asks for the usage: not an error")
	assert.Contains(t, stderr.String(), "-jobs")
}

// The summary names the limit that held the jobs back: the request rate
// when jobs are small, the token rate when they are large (issue 9: it said
// the request rate when the token rate was the bottleneck).
func TestSummaryNamesTheBindingLimit(t *testing.T) {
	_, _, out := simulate(t, "-jobs", "150", "-min-tokens", "10", "-max-tokens", "20")
	assert.Contains(t, out, "bound by         the request rate")
	_, _, out = simulate(t, "-jobs", "150", "-min-tokens", "1500", "-max-tokens", "1900")
	assert.Contains(t, out, "bound by         the token rate")
}
