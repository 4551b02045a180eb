package httplimit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

func TestOne429ThenSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			if n == 0 {
				return reply(429, "slow down", "Retry-After", "2"), nil
			}
			return reply(200, "fine"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api), httplimit.WithPauseLimiter(), httplimit.WithoutJitter)
		require.NoError(t, err)
		start := time.Now()
		req, _ := http.NewRequest(http.MethodPost, "http://api/x", strings.NewReader("payload"))
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "fine", readAll(t, resp))
		ts := api.times(start)
		require.Len(t, ts, 2)
		assert.GreaterOrEqual(t, ts[1], 2*time.Second)
		assert.Less(t, ts[1], 3*time.Second)
		assert.Equal(t, []int64{1, 1}, api.closes())
		assert.Equal(t, "payload", api.sent[0].body)
		assert.Equal(t, "payload", api.sent[1].body)
		st := tr.Stats()
		assert.Equal(t, httplimit.TransportStats{Requests: 1, Attempts: 2, Retries: 1, Throttled: 1, Pauses: 1,
			PausesStarted: httplimit.PauseCounts{TooManyRequests: 1}, Responses: [6]int64{2: 1, 4: 1}}, st)
	})
}

type closeCountingBody struct {
	io.Reader
	closed atomic.Int64
}

func (b *closeCountingBody) Close() error { b.closed.Add(1); return nil }

func TestANonReplayablePostIsHandedBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			return reply(429, "no", "Retry-After", "1"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api), httplimit.WithPauseLimiter(), httplimit.WithoutJitter)
		require.NoError(t, err)
		b := &closeCountingBody{Reader: strings.NewReader("x")}
		req, _ := http.NewRequest(http.MethodPost, "http://api/x", b)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 429, resp.StatusCode)
		assert.Equal(t, "no", readAll(t, resp))
		assert.Equal(t, 1, api.count())
		// POST without a body: handed back too (table)
		req, _ = http.NewRequest(http.MethodPost, "http://api/x", nil)
		resp, err = tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 429, resp.StatusCode)
		readAll(t, resp)
		assert.Equal(t, 2, api.count())
	})
}

func TestAPostAfterANetworkErrorIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) { return nil, boom }}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api), httplimit.WithPauseLimiter(), httplimit.WithoutJitter)
		require.NoError(t, err)
		req, _ := http.NewRequest(http.MethodPatch, "http://api/x", bytes.NewReader([]byte("p")))
		_, err = tr.RoundTrip(req)
		assert.ErrorIs(t, err, boom)
		assert.Equal(t, 1, api.count())
		req, _ = http.NewRequest(http.MethodPut, "http://api/x", bytes.NewReader([]byte("p")))
		_, err = tr.RoundTrip(req)
		assert.ErrorIs(t, err, boom)
		var re *retry.Error
		assert.ErrorAs(t, err, &re)
		assert.Equal(t, 4, api.count())
		assert.Equal(t, "p", api.sent[3].body)
	})
}

func TestCancelDuringAPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			return reply(429, "no", "Retry-After", "10"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api), httplimit.WithPauseLimiter(), httplimit.WithoutJitter)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api/x", nil)
		go func() { time.Sleep(3 * time.Second); cancel() }()
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 3*time.Second, time.Since(start))
		assert.Equal(t, []int64{1}, api.closes())
		// The pause still holds for others
		req2, _ := http.NewRequest(http.MethodGet, "http://api/y", nil)
		api.answer = func(n int, r *http.Request) (*http.Response, error) { return reply(200, "ok"), nil }
		resp, err = tr.RoundTrip(req2)
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 10*time.Second, time.Since(start))
	})
}

// A 429's wait read from a RateLimit field, or from a Retry-After date,
// pauses the limiter; the one retry comes after it.
func TestAWaitFromAFieldOrADatePauses(t *testing.T) {
	for name, first := range map[string]func() *http.Response{
		"RateLimit r=0;t=3": func() *http.Response {
			return reply(429, "", "RateLimit", `"default";r=0;t=3`, "RateLimit-Policy", `"default";q=5;w=10`)
		},
		"Retry-After a date 4s ahead": func() *http.Response {
			return reply(429, "", "Retry-After", time.Now().Add(4*time.Second).UTC().Format(http.TimeFormat))
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
					if n == 0 {
						return first(), nil
					}
					return reply(200, "ok"), nil
				}}
				lim := newLimiter(t, algorithms.PerSecond(100), 10)
				tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api), httplimit.WithPauseLimiter(), httplimit.WithoutJitter)
				require.NoError(t, err)
				start := time.Now()
				req, _ := http.NewRequest(http.MethodGet, "http://api/x", nil)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				readAll(t, resp)
				ts := api.times(start)
				require.Len(t, ts, 2)
				assert.GreaterOrEqual(t, ts[1], 3*time.Second)
			})
		})
	}
}

func TestACappedPauseHandsTheResponseBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			return reply(429, "later", "Retry-After", "3600"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api), httplimit.WithPauseLimiter(), httplimit.WithoutJitter, httplimit.WithMaxPause(5*time.Second))
		require.NoError(t, err)
		start := time.Now()
		req, _ := http.NewRequest(http.MethodGet, "http://api/x", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, time.Duration(0), time.Since(start))
		assert.Equal(t, 429, resp.StatusCode)
		assert.Equal(t, "later", readAll(t, resp))
		st := tr.Stats()
		assert.Equal(t, int64(1), st.Capped)
		assert.Equal(t, int64(1), st.Pauses)
		api.answer = func(n int, r *http.Request) (*http.Response, error) { return reply(200, "ok"), nil }
		req, _ = http.NewRequest(http.MethodGet, "http://api/x", nil)
		resp, err = tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, 5*time.Second, time.Since(start))
	})
}

func TestTheTransportAgainstTheMiddlewareOnLoopback(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerSecond(1), 1)
	var hits atomic.Int64
	srv := httptest.NewServer(httplimit.Middleware(l, byIP(t))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	})))
	defer srv.Close()
	base := srv.Client().Transport
	lim := newLimiter(t, algorithms.PerSecond(1000), 100)
	tr, err := httplimit.NewTransport(lim, httplimit.WithBase(base), httplimit.WithPauseLimiter(), httplimit.WithoutJitter)
	require.NoError(t, err)
	c := &http.Client{Transport: tr}
	defer c.CloseIdleConnections()
	resp, err := c.Post(srv.URL, "text/plain", strings.NewReader("one"))
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "one", string(b))
	start := time.Now()
	resp, err = c.Post(srv.URL, "text/plain", strings.NewReader("two"))
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "two", string(b))
	assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond)
	st := tr.Stats()
	assert.Equal(t, int64(3), st.Attempts)
	assert.Equal(t, int64(1), st.Throttled)
	assert.Equal(t, int64(2), hits.Load())
}

func TestA503BacksOffAndIsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			if n == 0 {
				return reply(503, "down"), nil
			}
			return reply(200, "ok"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api), httplimit.WithPauseLimiter(), httplimit.WithoutJitter)
		require.NoError(t, err)
		req, _ := http.NewRequest(http.MethodGet, "http://api/x", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp))
		assert.Equal(t, httplimit.TransportStats{Requests: 1, Attempts: 2, Retries: 1, Unavailable: 1,
			Responses: [6]int64{2: 1, 5: 1}}, tr.Stats())
		assert.Equal(t, []int64{1, 1}, api.closes())
	})
}

func TestAnIdempotencyKeyMakesAPostRetriable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			return reply(429, fmt.Sprint("r", n), "Retry-After", "1"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api), httplimit.WithPauseLimiter(), httplimit.WithoutJitter)
		require.NoError(t, err)
		req, _ := http.NewRequest(http.MethodPost, "http://api/x", nil)
		req.Header.Set("Idempotency-Key", "abc")
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 429, resp.StatusCode)
		assert.Equal(t, "r2", readAll(t, resp))
		assert.Equal(t, 3, api.count())
		assert.Equal(t, []int64{1, 1, 1}, api.closes())
		st := tr.Stats()
		assert.Equal(t, int64(3), st.Throttled)
		assert.Equal(t, int64(2), st.Retries)
		assert.Equal(t, int64(3), st.Pauses)
	})
}

func TestADeadlineInsideAPauseSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			if n == 0 {
				return reply(429, "", "Retry-After", "10"), nil
			}
			return reply(200, "ok"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api), httplimit.WithPauseLimiter(), httplimit.WithoutJitter, httplimit.WithRetry(retry.WithMaxAttempts(1)))
		require.NoError(t, err)
		req, _ := http.NewRequest(http.MethodGet, "http://api/x", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		b := &closeCountingBody{Reader: strings.NewReader("x")}
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, "http://api/x", b)
		start := time.Now()
		resp, err = tr.RoundTrip(req)
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, permits.ErrRateLimited)
		assert.Equal(t, time.Duration(0), time.Since(start))
		assert.Equal(t, int64(1), b.closed.Load())
		assert.Equal(t, 1, api.count())
	})
}

func TestConcurrent429sPauseOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var refused atomic.Int64
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			if n < 3 {
				refused.Add(1)
				return reply(429, "no", "Retry-After", "1"), nil
			}
			return reply(200, "ok"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api), httplimit.WithPauseLimiter(), httplimit.WithoutJitter)
		require.NoError(t, err)
		var wg sync.WaitGroup
		var okc atomic.Int64
		for range 20 {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPut, "http://api/x", strings.NewReader("b"))
				resp, err := tr.RoundTrip(req)
				if !assert.NoError(t, err) {
					return
				}
				if resp.StatusCode == 200 {
					okc.Add(1)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		wg.Wait()
		assert.Equal(t, int64(20), okc.Load())
		for i, c := range api.closes() {
			assert.Equal(t, int64(1), c, "body %d", i)
		}
		st := tr.Stats()
		assert.Equal(t, int64(20), st.Requests)
		assert.Equal(t, st.Attempts, int64(api.count()))
		assert.Equal(t, int64(3), st.Throttled)
	})
}
