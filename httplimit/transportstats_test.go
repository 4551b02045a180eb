package httplimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/breaker"
	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// hostScript answers each host's first request with its status (and a
// Retry-After of its seconds), and every later one with 200.
func hostScript(first map[string][2]string) *fakeAPI {
	var mu sync.Mutex
	seen := map[string]bool{}
	return &fakeAPI{answer: func(_ int, r *http.Request) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		f, ok := first[r.URL.Host]
		if !ok || seen[r.URL.Host] {
			return reply(http.StatusOK, "ok"), nil
		}
		seen[r.URL.Host] = true
		return reply(atoi(f[0]), "no", "Retry-After", f[1]), nil
	}}
}

func atoi(s string) int {
	n, _ := parseInt(s)
	return int(n)
}

func fetchOnce(t *testing.T, tr http.RoundTripper, url string) {
	t.Helper()
	resp, err := do(t, tr, http.MethodGet, url, nil)
	require.NoError(t, err)
	readAll(t, resp)
}

// The counters after a scripted timeline of host pauses: a 429 pauses
// a.test for 2 s, a 503 and a 529 pause b.test and c.test for 1 s; a
// request to a.test made during its pause waits (the one paced wait); the
// gauge counts the hosts paused at each instant, and none once every
// pause has passed. The observer is told every attempt's wait.
func TestTransportStatsCountPausesByReasonAndTheHostsPausedNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waits permits.WaitHistogram
		api := hostScript(map[string][2]string{"a.test": {"429", "2"}, "b.test": {"503", "1"}, "c.test": {"529", "1"}})
		tr, err := httplimit.NewTransport(newLimiter(t, algorithms.PerSecond(100), 10), httplimit.WithBase(api),
			httplimit.WithoutJitter, httplimit.WithObserver(&waits))
		require.NoError(t, err)
		var wg sync.WaitGroup
		wg.Go(func() { fetchOnce(t, tr, "http://a.test/1") })
		synctest.Wait() // t0: a.test paused, its retry waiting
		st := tr.Stats()
		assert.Equal(t, int64(1), st.PausedHosts)
		assert.Equal(t, httplimit.PauseCounts{TooManyRequests: 1}, st.PausesStarted)

		time.Sleep(time.Second) // t0+1s
		wg.Go(func() { fetchOnce(t, tr, "http://b.test/") })
		wg.Go(func() { fetchOnce(t, tr, "http://c.test/") })
		wg.Go(func() { fetchOnce(t, tr, "http://a.test/2") }) // waits for a.test's pause: 1 s
		synctest.Wait()
		assert.Equal(t, int64(3), tr.Stats().PausedHosts, "a.test until t0+2s, b.test and c.test until t0+2s")

		wg.Wait()
		assert.Equal(t, httplimit.TransportStats{
			Requests: 4, Attempts: 7, Paced: 1, Retries: 3, Throttled: 1, Unavailable: 2, Pauses: 3,
			PausesStarted: httplimit.PauseCounts{TooManyRequests: 1, ServiceUnavailable: 1, Other: 1},
			Responses:     [6]int64{2: 4, 4: 1, 5: 2},
		}, tr.Stats(), "every pause has passed: no host paused")
		snap := waits.Snapshot()
		assert.Equal(t, uint64(7), snap.Count, "one wait per attempt")
		assert.Equal(t, uint64(6), snap.Counts[0], "six granted at once")
		assert.Equal(t, time.Second, snap.Sum, "the request made during a.test's pause waited 1 s")
	})
}

// The limiter's pacing is a paced wait too: the second request of a
// limiter of 1/s waits a second for its permit.
func TestTransportStatsCountTheLimitersPacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waits permits.WaitHistogram
		api := &fakeAPI{answer: always(func() *http.Response { return reply(http.StatusOK, "ok") })}
		tr := newTransport(t, newLimiter(t, algorithms.PerSecond(1), 1), api, httplimit.WithObserver(&waits))
		fetchOnce(t, tr, "http://api.test/")
		fetchOnce(t, tr, "http://api.test/")
		st := tr.Stats()
		assert.Equal(t, int64(1), st.Paced)
		assert.Equal(t, [6]int64{2: 2}, st.Responses)
		assert.Equal(t, time.Second, waits.Snapshot().Sum)
		assert.Equal(t, uint64(2), waits.Snapshot().Count)
	})
}

// A retry the budget refuses is counted once per RoundTrip, and the
// response goes back as it came.
func TestTransportStatsCountRetriesTheBudgetRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: always(func() *http.Response { return reply(http.StatusServiceUnavailable, "down") })}
		b, err := budget.New(budget.WithMinRetriesPerSec(0), budget.WithPercentCanRetry(0))
		require.NoError(t, err)
		tr := newTransport(t, fast(t), api, httplimit.WithBudget(b))
		for range 2 {
			resp, err := do(t, tr, http.MethodGet, "http://api.test/", nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			readAll(t, resp)
		}
		st := tr.Stats()
		assert.Equal(t, int64(2), st.RefusedRetries)
		assert.Equal(t, int64(0), st.Retries)
		assert.Equal(t, [6]int64{5: 2}, st.Responses)
	})
}

// An attempt the open breaker refuses is counted, and never sent.
func TestTransportStatsCountAttemptsTheBreakerRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: always(func() *http.Response { return reply(http.StatusServiceUnavailable, "down") })}
		br, err := breaker.New(breaker.WithConsecutiveFailures(1), breaker.WithOpenTimeout(time.Minute))
		require.NoError(t, err)
		tr := newTransport(t, fast(t), api, httplimit.WithBreaker(br),
			httplimit.WithRetry(retry.WithMaxAttempts(2), retry.WithBackoff(0, 0)))
		_, err = do(t, tr, http.MethodGet, "http://api.test/", nil)
		assert.ErrorIs(t, err, breaker.ErrOpen, "the 503 opened the breaker; its retry met it")
		st := tr.Stats()
		assert.Equal(t, int64(1), st.BreakerRejected)
		assert.Equal(t, int64(1), st.Attempts)
		assert.Equal(t, int64(1), st.Retries)
		assert.Equal(t, 1, api.count(), "the refused attempt was not sent")
	})
}

// Against a real server on loopback: a response of every class is counted
// in its class, a 503 that asks for two hours pauses its host for the cap
// and goes back as it came, and a request to the paused host within a
// deadline fails at once without an attempt, while the gauge says one
// host is paused.
func TestTransportStatsCountResponsesByClassFromARealServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/ok", http.StatusMovedPermanently)
		case "/gone":
			http.NotFound(w, r)
		case "/busy":
			w.Header().Set("Retry-After", "7200")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			_, _ = w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr, err := httplimit.NewTransport(permits.Unlimited, httplimit.WithBase(base), httplimit.WithMaxPause(time.Hour))
	require.NoError(t, err)
	for _, path := range []string{"/ok", "/moved", "/gone", "/busy"} {
		fetchOnce(t, tr, srv.URL+path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/ok", nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	assert.ErrorIs(t, err, permits.ErrRateLimited, "paused for an hour: past the deadline")

	st := tr.Stats()
	st.Paced = 0 // in real time, whether an attempt took more than 1µs to be granted is the machine's
	assert.Equal(t, httplimit.TransportStats{
		Requests: 5, Attempts: 4, Unavailable: 1, Pauses: 1, Capped: 1,
		PausesStarted: httplimit.PauseCounts{ServiceUnavailable: 1},
		Responses:     [6]int64{2: 1, 3: 1, 4: 1, 5: 1},
		PausedHosts:   1,
	}, st)
}
