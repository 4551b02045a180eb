package httplimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

func gcraLimiter(t *testing.T, rate algorithms.Rate, burst int64, opts ...keyed.Option) *keyed.Limiter[string] {
	t.Helper()
	l, err := keyed.New(func(string) (algorithms.Algorithm, error) { return algorithms.NewGCRA(rate, burst) }, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })

func byIP(t *testing.T, opts ...httplimit.IPOption) httplimit.KeyFunc {
	t.Helper()
	k, err := httplimit.KeyByIP(opts...)
	require.NoError(t, err)
	return k
}

// get sends a GET through a real client and returns the response with its
// body read.
func get(t *testing.T, c *http.Client, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func TestARealServerSpeaksTheRateLimitFields(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerMinute(100), 100)
	srv := httptest.NewServer(httplimit.Middleware(l, byIP(t), httplimit.WithPolicy("api"), httplimit.WithCost(func(r *http.Request) int64 {
		if r.URL.Path == "/bulk" {
			return 50
		}
		return 1
	}))(ok))
	defer srv.Close()
	c := srv.Client()

	resp, body := get(t, c, srv.URL+"/bulk", nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok\n", body)
	assert.Equal(t, `"api";q=100;w=60`, resp.Header.Get("RateLimit-Policy"))
	// 50 of 100 used at 100/min: full again in 30s, the next unit back in
	// 0.6 s, which is the effective window. The clock moves a little
	// between requests; t is rounded up.
	assert.Equal(t, `"api";r=50;t=1`, resp.Header.Get("RateLimit"))
	assert.Empty(t, resp.Header.Get("Retry-After"))

	resp, _ = get(t, c, srv.URL+"/bulk", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	lims, err := httplimit.ParseServiceLimits(resp.Header.Values("RateLimit")...)
	require.NoError(t, err)
	assert.Equal(t, int64(0), lims[0].Remaining)
	assert.Equal(t, time.Second, lims[0].Reset, "the next unit in 0.6 s")

	resp, body = get(t, c, srv.URL+"/", nil)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"), "0.6s rounds up to 1")
	assert.Equal(t, `"api";r=0;t=1`, resp.Header.Get("RateLimit"))
	assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	var p httplimit.Problem
	require.NoError(t, json.Unmarshal([]byte(body), &p))
	assert.Equal(t, httplimit.Problem{Type: httplimit.QuotaExceeded, Title: p.Title, Status: 429, Detail: "retry after 1 s", ViolatedPolicies: []string{"api"}}, p)
	assert.NotEmpty(t, p.Title)
}

func TestRetryAfterIsWholeSecondsRoundedUp(t *testing.T) {
	for _, c := range []struct {
		rate algorithms.Rate
		want string
	}{
		{algorithms.Every(time.Second), "1"}, // exactly one second: 1, not 2
		{algorithms.Every(1500 * time.Millisecond), "2"},
		{algorithms.Every(2 * time.Second), "2"},
		{algorithms.Every(10 * time.Millisecond), "1"},
	} {
		synctest.Test(t, func(t *testing.T) {
			l := gcraLimiter(t, c.rate, 1)
			h := httplimit.Middleware(l, httplimit.KeyByHeader("X-User"))(ok)
			serve := func() *httptest.ResponseRecorder {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, "/", nil)
				req.Header.Set("X-User", "u")
				h.ServeHTTP(rec, req)
				return rec
			}
			require.Equal(t, http.StatusOK, serve().Code)
			rec := serve()
			require.Equal(t, http.StatusTooManyRequests, rec.Code)
			assert.Equal(t, c.want, rec.Header().Get("Retry-After"), "%v", c.rate)
		})
	}
}

func TestSpoofedForwardedForDoesNotChangeTheKey(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerHour(1), 1)
	srv := httptest.NewServer(httplimit.Middleware(l, byIP(t))(ok))
	defer srv.Close()
	c := srv.Client()
	resp, _ := get(t, c, srv.URL, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, xff := range []string{"203.0.113.9", "198.51.100.1, 203.0.113.10", "garbage"} {
		resp, _ := get(t, c, srv.URL, map[string]string{"X-Forwarded-For": xff})
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "X-Forwarded-For %q is not trusted by default", xff)
	}

	// Behind a trusted proxy (the loopback client stands for it), the
	// client is the right-most untrusted hop; what the client wrote to its
	// left changes nothing.
	l2 := gcraLimiter(t, algorithms.PerHour(1), 1)
	srv2 := httptest.NewServer(httplimit.Middleware(l2, byIP(t, httplimit.TrustProxies("127.0.0.0/8", "::1", "10.0.0.0/8")))(ok))
	defer srv2.Close()
	resp, _ = get(t, c, srv2.URL, map[string]string{"X-Forwarded-For": "203.0.113.7, 10.1.2.3"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = get(t, c, srv2.URL, map[string]string{"X-Forwarded-For": "1.1.1.1, 203.0.113.7, 10.9.9.9"})
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "a spoofed left part is ignored")
	resp, _ = get(t, c, srv2.URL, map[string]string{"X-Forwarded-For": "203.0.113.8"})
	assert.Equal(t, http.StatusOK, resp.StatusCode, "another client")
	resp, body := get(t, c, srv2.URL, map[string]string{"X-Forwarded-For": "nonsense, 10.0.0.1"})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
}

func TestHeaderKeysCannotTakeAnotherClientsQuota(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerHour(1), 1, keyed.WithMaxKeys(3))
	known := map[string]bool{"k1": true}
	key := httplimit.FirstKey(httplimit.KeyByAPIKey(func(k string) bool { return known[k] }), byIP(t))
	srv := httptest.NewServer(httplimit.Middleware(l, key)(ok))
	defer srv.Close()
	c := srv.Client()

	// The client's address is spent...
	resp, _ := get(t, c, srv.URL, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// ...and an API key equal to an address is a key of its own kind.
	known["127.0.0.1"] = true
	resp, _ = get(t, c, srv.URL, map[string]string{"Authorization": "Bearer 127.0.0.1"})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = get(t, c, srv.URL, map[string]string{"X-API-Key": "k1"})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = get(t, c, srv.URL, map[string]string{"X-API-Key": "k1"})
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	// Made-up keys fall back to the address, which is spent.
	for _, k := range []string{"made-up-1", "made-up-2"} {
		resp, _ = get(t, c, srv.URL, map[string]string{"X-API-Key": k})
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, k)
	}
	assert.Equal(t, 3, l.Stats().Keys)

	// A header clients choose freely gives each value a key, until the
	// limiter's cap: then new keys get 503.
	l2 := gcraLimiter(t, algorithms.PerHour(1), 1, keyed.WithMaxKeys(2))
	srv2 := httptest.NewServer(httplimit.Middleware(l2, httplimit.KeyByHeader("X-Tenant"))(ok))
	defer srv2.Close()
	codes := []int{}
	for _, v := range []string{"a", "b", "c", ""} {
		resp, _ := get(t, c, srv2.URL, map[string]string{"X-Tenant": v})
		codes = append(codes, resp.StatusCode)
	}
	assert.Equal(t, []int{200, 200, 503, 400}, codes)
	resp, _ = get(t, c, srv2.URL, map[string]string{"X-Tenant": strings.Repeat("x", 300)})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "an oversized key")
}

func TestWaitInsteadOfRefusing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerSecond(10), 1)
		h := httplimit.Middleware(l, httplimit.KeyByHeader("X-User"), httplimit.WithWait(250*time.Millisecond))(ok)
		start := time.Now()
		var mu sync.Mutex
		var done []time.Duration
		var codes []int
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, "/", nil)
				req.Header.Set("X-User", "u")
				h.ServeHTTP(rec, req)
				mu.Lock()
				codes = append(codes, rec.Code)
				if rec.Code == http.StatusOK {
					done = append(done, time.Since(start))
				} else {
					assert.Equal(t, "1", rec.Header().Get("Retry-After"))
				}
				mu.Unlock()
			})
			synctest.Wait()
		}
		wg.Wait()
		// Granted at 0, 100ms, 200ms; the fourth would wait 300ms > 250ms.
		assert.Equal(t, []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}, done)
		assert.ElementsMatch(t, []int{200, 200, 200, 429}, codes)
	})
}

func TestWaitZeroNeverWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerSecond(1), 1)
		h := httplimit.Middleware(l, httplimit.KeyByHeader("X-User"), httplimit.WithWait(0))(ok)
		var codes []int
		for range 2 {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set("X-User", "u")
			h.ServeHTTP(rec, req)
			codes = append(codes, rec.Code)
		}
		assert.Equal(t, []int{200, 429}, codes)
	})
}

func TestAClientThatGoesAwayWhileWaitingLeavesTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerHour(1), 1)
		h := httplimit.Middleware(l, httplimit.KeyByHeader("X-User"), httplimit.WithWait(-1))(ok)
		serve := func(ctx context.Context) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
			req.Header.Set("X-User", "u")
			h.ServeHTTP(rec, req)
			return rec
		}
		require.Equal(t, 200, serve(context.Background()).Code)
		ctx, cancel := context.WithCancel(context.Background())
		var rec *httptest.ResponseRecorder
		var wg sync.WaitGroup
		wg.Go(func() { rec = serve(ctx) })
		synctest.Wait()
		assert.Equal(t, 1, l.Stats().Waiting)
		cancel()
		wg.Wait()
		assert.False(t, rec.Flushed)
		assert.Empty(t, rec.Body.String(), "nobody to answer")
		assert.Equal(t, uint64(1), l.Stats().Canceled)
	})
}

func TestErrorsAndOverrides(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerSecond(1), 5)
	var denied httplimit.Denial
	h := httplimit.Middleware(l, httplimit.KeyByHeader("X-User"),
		httplimit.WithCost(func(r *http.Request) int64 { return int64(len(r.URL.Path)) }),
		httplimit.WithDeniedHandler(func(w http.ResponseWriter, r *http.Request, d httplimit.Denial) {
			denied = d
			w.WriteHeader(http.StatusTeapot)
		}),
		nil,
	)(ok)
	serve := func(path, user string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if user != "" {
			req.Header.Set("X-User", user)
		}
		h.ServeHTTP(rec, req)
		return rec
	}
	assert.Equal(t, http.StatusBadRequest, serve("/", "").Code)
	assert.Equal(t, http.StatusRequestEntityTooLarge, serve("/toolong", "u").Code)
	assert.Equal(t, http.StatusOK, serve("/abcd", "u").Code)
	rec := serve("/ab", "u")
	assert.Equal(t, http.StatusTeapot, rec.Code)
	assert.Equal(t, "header:X-User:u", denied.Key)
	assert.Equal(t, "default", denied.Policy)
	assert.ErrorIs(t, denied.Err, permits.ErrRateLimited)
	// 5 units spent, 3 asked for at 1/s: 3s.
	assert.Equal(t, 3*time.Second, denied.RetryAfter.Round(time.Second))
	assert.Equal(t, "3", rec.Header().Get("Retry-After"))

	// A limiter that does not report quotas: Retry-After only.
	plain := httplimit.Middleware(plainLimiter{}, httplimit.KeyByHeader("X-User"))(ok)
	rec = httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("X-User", "u")
	plain.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)
	assert.Equal(t, "3", rec.Header().Get("Retry-After"))
	assert.Empty(t, rec.Header().Get("RateLimit"))

	l.Close()
	assert.Equal(t, http.StatusServiceUnavailable, serve("/a", "u").Code)
	assert.Panics(t, func() { httplimit.Middleware(nil, httplimit.KeyByHeader("X")) })
}

type plainLimiter struct{}

func (plainLimiter) Acquire(ctx context.Context, key string, cost int64) (permits.Permit, error) {
	return permits.Permit{}, errors.New("unused")
}

func (plainLimiter) TryAcquire(key string, cost int64) (permits.Permit, error) {
	return permits.Permit{}, &permits.RateLimitError{RetryAfter: 2500 * time.Millisecond}
}
