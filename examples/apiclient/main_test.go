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

	"github.com/sluicehq/sluice/internal/demoapi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// inProcess serves requests by calling the API's handler directly, so that
// the client, the API and their clocks all live in one synctest bubble: no
// socket, whose goroutines would never be durably blocked. Each way takes
// oneWay of virtual time, as a network does: a response that pauses the
// client reaches it only after the requests sent meanwhile have left.
type inProcess struct{ h http.Handler }

const oneWay = 500 * time.Microsecond

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(oneWay)
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, r)
	time.Sleep(oneWay)
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
		api := demoapi.New(cfg.apiConfig())
		res, err = run(context.Background(), cfg, api, inProcess{api}, "http://api.test", newProgress(&progress, false))
		require.NoError(t, err)
	})
	var out bytes.Buffer
	res.print(&out, cfg)
	return res, cfg, out.String()
}

// TestDefaultRun is the README's command in virtual time: every job done,
// no 429 for the quota, the overload's 429s each retried after its
// Retry-After and none lost, at least 95% of the token quota used outside
// the overload, FIFO kept.
func TestDefaultRun(t *testing.T) {
	res, cfg, out := simulate(t)
	t.Log(out)
	a := res.api
	assert.Equal(t, 500, res.done)
	assert.Zero(t, a.QuotaRefused, "429s for the quota")
	assert.Positive(t, a.OverloadRefused, "the overload happened during the run")
	assert.Equal(t, a.OverloadRefused, a.RetriedInTime, "each retried after its Retry-After")
	assert.Zero(t, a.RetriedEarly)
	assert.Zero(t, a.NeverRetried, "none lost")
	assert.GreaterOrEqual(t, res.quotaUsed, 0.95)
	assert.LessOrEqual(t, res.quotaUsed, 1.0)
	assert.LessOrEqual(t, res.peakWindow, cfg.tokenLimit())
	assert.LessOrEqual(t, a.PeakRequests, cfg.rps)
	assert.Less(t, a.TokensUsed, a.TokensEstimated, "the estimates are larger than the usage")
	assert.GreaterOrEqual(t, res.elapsed, 15*time.Second)
	assert.LessOrEqual(t, res.elapsed, 35*time.Second)
	assert.Zero(t, res.overtakes, "FIFO")
	for _, want := range []string{"jobs done        500 / 500", "429s, quota      0 ", "0 before it, 0 lost", "bound by         the token quota", "FIFO             kept"} {
		assert.Contains(t, out, want)
	}
}

// TestZeroMarginIsExact: with no margin the client is exactly as fast as
// the API's checks allow. In virtual time there is no delay between a grant
// and its arrival, so it gets no 429, while filling the API's token window
// to its limit, or within one job of it.
func TestZeroMarginIsExact(t *testing.T) {
	res, cfg, _ := simulate(t, "-margin", "0", "-jobs", "300", "-overload-for", "0")
	assert.Zero(t, res.api.QuotaRefused, "the API must not be stricter than the client's limits")
	assert.Greater(t, res.peakWindow, cfg.tokenLimit()-cfg.maxTokens, "and the client fills the window")
}

// TestTooFastClientGets429s: the API's checks are strict enough that a
// client 10% above the quota is refused; the demo proves something.
func TestTooFastClientGets429s(t *testing.T) {
	res, _, out := simulate(t, "-margin", "-10", "-jobs", "200", "-overload-for", "0")
	assert.Positive(t, res.api.QuotaRefused, "the API must not be more lenient than the client's limits")
	assert.Equal(t, 200, res.done, "429s are retried after Retry-After")
	assert.NotContains(t, out, "429s, quota      0 ")
}

// Settling is what uses the quota: a client that keeps its estimates fills
// its own window with tokens the API gave back, and uses much less of it.
func TestSettlingUsesTheQuota(t *testing.T) {
	settled, _, _ := simulate(t, "-jobs", "300", "-overload-for", "0")
	kept, _, out := simulate(t, "-jobs", "300", "-overload-for", "0", "-settle=false")
	assert.GreaterOrEqual(t, settled.quotaUsed, 0.95)
	assert.Less(t, kept.quotaUsed, 0.9)
	assert.Zero(t, kept.transport.Settled)
	assert.Zero(t, kept.api.QuotaRefused)
	assert.Contains(t, out, "never settles it")
}

// A longer overload with a longer Retry-After: every 429 is retried after
// it, none is lost, and the pause holds every caller back, so that the
// overload costs a few 429s per Retry-After, not one per job.
func TestALongerOverloadIsAbsorbed(t *testing.T) {
	res, cfg, _ := simulate(t, "-jobs", "300", "-overload-at", "4s", "-overload-for", "6s", "-overload-retry-after", "2s")
	a := res.api
	assert.Equal(t, 300, res.done)
	assert.Zero(t, a.QuotaRefused)
	assert.Equal(t, a.OverloadRefused, a.RetriedInTime)
	assert.Zero(t, a.NeverRetried)
	assert.Positive(t, res.transport.Pauses)
	assert.LessOrEqual(t, a.OverloadRefused, 3*(6/2+1), "a few per Retry-After: the pause stops the others")
	assert.Less(t, a.OverloadRefused, cfg.concurrency)
}

// TestOnLoopback runs the command itself, with flags that make it quick,
// against a real HTTP server on loopback.
func TestOnLoopback(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{
		"-jobs", "40", "-rps", "100", "-tpm", "6000000", "-latency", "10ms", "-overload-at", "0s", "-overload-for", "1s",
	}, &stdout, &stderr, false)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "jobs done        40 / 40")
	assert.Regexp(t, `429s, overload   [1-9]\d*, absorbed: \d+ retried after their Retry-After, 0 before it, 0 lost`, stdout.String())
	assert.Contains(t, stderr.String(), "40/40 jobs", "the last progress line")
}

func TestProgressOnATerminalRedrawsOneLine(t *testing.T) {
	cfg, err := parseFlags([]string{"-jobs", "60", "-progress", "100ms"}, io.Discard)
	require.NoError(t, err)
	var progress bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		api := demoapi.New(cfg.apiConfig())
		_, err := run(context.Background(), cfg, api, inProcess{api}, "http://api.test", newProgress(&progress, true))
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
		{"-max-tokens", "40001"}, // above the API's 40,000 per window
		{"-latency", "0s"}, {"-token-window", "2m"}, {"-tpm", "1000000000001"}, {"-overload-retry-after", "0s"}, {"-nope"},
	} {
		_, err := parseFlags(bad, io.Discard)
		assert.Error(t, err, "%v", bad)
	}
	huge, err := parseFlags([]string{"-tpm", "1000000000000", "-token-window", "1m", "-max-tokens", "1000000"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, int64(1_000_000_000_000), huge.tokenLimit(), "no overflow at the largest flags")
	var stderr bytes.Buffer
	assert.Equal(t, 2, realMain(context.Background(), []string{"-jobs", "-1"}, io.Discard, &stderr, false))
	assert.Contains(t, stderr.String(), "-jobs")
	stderr.Reset()
	assert.Equal(t, 0, realMain(context.Background(), []string{"-h"}, io.Discard, &stderr, false), "-h asks for the usage: not an error")
	assert.Contains(t, stderr.String(), "-jobs")
}

// Small jobs make the request quota the limit that binds, large ones the
// token quota (issue 9: the summary named the wrong one).
func TestTheLimitThatBinds(t *testing.T) {
	_, _, out := simulate(t, "-jobs", "300", "-min-tokens", "10", "-max-tokens", "20", "-overload-for", "0")
	assert.Contains(t, out, "bound by         the request quota: 9")
	_, _, out = simulate(t, "-jobs", "300", "-min-tokens", "1500", "-max-tokens", "1900", "-overload-for", "0")
	assert.Contains(t, out, "bound by         the token quota: 9")
}
