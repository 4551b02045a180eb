package demoapi_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/demoapi"
)

// ask sends one completion request for job to api and returns the answer.
func ask(api http.Handler, job string, prompt, maxTokens int64) *http.Response {
	body := `{"prompt_tokens": ` + strconv.FormatInt(prompt, 10) + `, "max_tokens": ` + strconv.FormatInt(maxTokens, 10) + `}`
	req := httptest.NewRequest(http.MethodPost, "/v1/complete", strings.NewReader(body))
	req.Header.Set("X-Job-Id", job)
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	return rec.Result()
}

func config() demoapi.Config {
	return demoapi.Config{RPS: 100, TokenLimit: 1_000_000, TokenWindow: 2 * time.Second, MaxConcurrent: 100, Latency: 100 * time.Millisecond, Seed: 1}
}

func TestRequestQuota(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := config()
		c.RPS = 2
		api := demoapi.New(c)
		t0 := time.Now()
		assert.Equal(t, http.StatusOK, ask(api, "1", 10, 10).StatusCode)
		assert.Equal(t, http.StatusOK, ask(api, "2", 10, 10).StatusCode)
		refused := ask(api, "3", 10, 10)
		assert.Equal(t, http.StatusTooManyRequests, refused.StatusCode, "a third arrival within 1 s")
		assert.Equal(t, "1", refused.Header.Get("Retry-After"))
		time.Sleep(time.Until(t0.Add(time.Second)))
		assert.Equal(t, http.StatusOK, ask(api, "3", 10, 10).StatusCode, "the first arrival has left the window")
		s := api.Snapshot()
		assert.Equal(t, 3, s.Accepted)
		assert.Equal(t, 1, s.QuotaRefused)
		assert.Equal(t, 2, s.PeakRequests)
	})
}

// The token quota charges the estimate on arrival and the real usage once
// the request answers; a refusal says when enough has left the window.
func TestTokenQuotaChargesEstimateThenUsage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := config()
		c.TokenLimit = 1200
		api := demoapi.New(c)
		var first *http.Response
		var wg sync.WaitGroup
		wg.Go(func() { first = ask(api, "1", 0, 800) })
		synctest.Wait() // the first is being served: its estimate, 800, is charged
		inFlight := ask(api, "2", 0, 500)
		assert.Equal(t, http.StatusTooManyRequests, inFlight.StatusCode, "800 in flight + 500 > 1200")
		assert.Equal(t, "2", inFlight.Header.Get("Retry-After"), "until the first leaves the 2 s window")
		wg.Wait()
		require.Equal(t, http.StatusOK, first.StatusCode)
		used, err := strconv.ParseInt(first.Header.Get("X-Usage-Tokens"), 10, 64)
		require.NoError(t, err)
		assert.True(t, used >= 200 && used <= 800, "a completion is 1/4 to all of max_tokens: %d", used)
		after := ask(api, "2", 0, 500)
		if used+500 <= 1200 {
			assert.Equal(t, http.StatusOK, after.StatusCode, "the window now holds the usage, %d", used)
		} else {
			assert.Equal(t, http.StatusTooManyRequests, after.StatusCode, "the window now holds the usage, %d", used)
		}
		s := api.Snapshot()
		require.NotEmpty(t, s.Charges)
		assert.Equal(t, demoapi.Charge{At: s.First, Tokens: used, Estimate: 800, AnsweredAt: s.Charges[0].AnsweredAt}, s.Charges[0])
		peak := int64(800) // the first's estimate, at its arrival
		if after.StatusCode == http.StatusOK {
			peak = max(peak, used+500)
		}
		assert.Equal(t, peak, s.PeakTokens, "the most charged at an arrival")
	})
}

func TestConcurrencyCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := config()
		c.MaxConcurrent = 1
		api := demoapi.New(c)
		var wg sync.WaitGroup
		wg.Go(func() { ask(api, "1", 10, 10) })
		synctest.Wait()
		assert.Equal(t, http.StatusTooManyRequests, ask(api, "2", 10, 10).StatusCode, "one at once")
		wg.Wait()
		assert.Equal(t, http.StatusOK, ask(api, "2", 10, 10).StatusCode)
		assert.Equal(t, 1, api.Snapshot().QuotaRefused)
	})
}

// The overload refuses everything with its Retry-After, and the API tells
// a retry that came after it from one that came early or never.
func TestOverload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := config()
		c.OverloadAt, c.OverloadFor, c.OverloadRetry = time.Second, 2*time.Second, time.Second
		api := demoapi.New(c)
		t0 := time.Now()
		at := func(d time.Duration) { time.Sleep(time.Until(t0.Add(d))) }
		assert.Equal(t, http.StatusOK, ask(api, "a", 10, 10).StatusCode, "before the overload")
		at(1500 * time.Millisecond)
		refused := ask(api, "b", 10, 10)
		assert.Equal(t, http.StatusTooManyRequests, refused.StatusCode)
		assert.Equal(t, "1", refused.Header.Get("Retry-After"))
		at(2 * time.Second)
		assert.Equal(t, http.StatusTooManyRequests, ask(api, "b", 10, 10).StatusCode, "early, and still overloaded")
		at(2900 * time.Millisecond)
		assert.Equal(t, http.StatusTooManyRequests, ask(api, "c", 10, 10).StatusCode)
		at(3100 * time.Millisecond)
		assert.Equal(t, http.StatusOK, ask(api, "b", 10, 10).StatusCode, "after its Retry-After and the overload")
		s := api.Snapshot()
		assert.Equal(t, 3, s.OverloadRefused)
		assert.Equal(t, 1, s.RetriedEarly, "b at +2.0s, refused at +1.5s with Retry-After 1")
		assert.Equal(t, 1, s.RetriedInTime, "b at +3.1s, refused at +2.0s")
		assert.Equal(t, 1, s.NeverRetried, "c")
		assert.Zero(t, s.QuotaRefused)
		assert.Equal(t, t0.Add(time.Second), s.OverloadFrom)
		assert.Equal(t, t0.Add(3*time.Second), s.OverloadTo)
	})
}

func TestHeadersAndBadRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := demoapi.New(config())
		resp := ask(api, "1", 100, 50)
		assert.Equal(t, `"requests";q=100;w=1, "tokens";q=1000000;qu="tokens";w=2`, resp.Header.Get("RateLimit-Policy"))
		assert.Equal(t, "99", resp.Header.Get("X-Ratelimit-Remaining-Requests"))
		assert.Contains(t, resp.Header.Get("RateLimit"), `"requests";r=99;t=1`)
		for _, body := range []string{"", "{", `{"prompt_tokens": -1, "max_tokens": 5}`, `{"prompt_tokens": 1, "max_tokens": 0}`} {
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
			assert.Equal(t, http.StatusBadRequest, rec.Code, "%q", body)
		}
		assert.Equal(t, 1, api.Snapshot().Accepted)
	})
}
