package httplimit_test

import (
	"bytes"
	"context"
	"encoding/json"
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

func rvServe(h http.Handler, remote string, hdr ...string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	if remote != "" {
		req.RemoteAddr = remote
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	h.ServeHTTP(rec, req)
	return rec
}

func TestSemanticsRemainingCountsDownExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerMinute(10), 10)
		h := httplimit.Middleware(l, byIP(t))(ok)
		for i := 1; i <= 10; i++ {
			rec := rvServe(h, "192.0.2.1:1234")
			require.Equal(t, 200, rec.Code)
			assert.Equal(t, `"default";q=10;w=60`, rec.Header().Get("RateLimit-Policy"))
			assert.Equal(t, fmt.Sprintf(`"default";r=%d;t=%d`, 10-i, 6*i), rec.Header().Get("RateLimit"), "after %d", i)
			assert.Empty(t, rec.Header().Get("Retry-After"))
		}
		rec := rvServe(h, "192.0.2.1:1234")
		require.Equal(t, 429, rec.Code)
		assert.Equal(t, "6", rec.Header().Get("Retry-After"))
		assert.Equal(t, `"default";r=0;t=6`, rec.Header().Get("RateLimit"))
		assert.Equal(t, `"default";q=10;w=60`, rec.Header().Get("RateLimit-Policy"))
		var p httplimit.Problem
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
		assert.Equal(t, 429, p.Status)
		assert.Equal(t, httplimit.QuotaExceeded, p.Type)
		assert.Equal(t, []string{"default"}, p.ViolatedPolicies)
		// another key is untouched
		rec = rvServe(h, "192.0.2.2:1234")
		assert.Equal(t, 200, rec.Code)
		assert.Equal(t, `"default";r=9;t=6`, rec.Header().Get("RateLimit"))

		time.Sleep(5500 * time.Millisecond)
		rec = rvServe(h, "192.0.2.1:9999")
		require.Equal(t, 429, rec.Code)
		assert.Equal(t, "1", rec.Header().Get("Retry-After"))
		assert.Equal(t, `"default";r=0;t=1`, rec.Header().Get("RateLimit"))
		time.Sleep(500 * time.Millisecond)
		rec = rvServe(h, "192.0.2.1:9999")
		require.Equal(t, 200, rec.Code)
		assert.Equal(t, `"default";r=0;t=60`, rec.Header().Get("RateLimit"))
	})
}

// A limiter whose refusal says a wait shorter than anything, or none.
type rvZeroLimiter struct{ wait time.Duration }

func (rvZeroLimiter) Acquire(ctx context.Context, key string, cost int64) (permits.Permit, error) {
	return permits.Permit{}, errors.New("unused")
}

func (z rvZeroLimiter) TryAcquire(key string, cost int64) (permits.Permit, error) {
	return permits.Permit{}, &permits.RateLimitError{RetryAfter: z.wait}
}

func TestSemanticsRetryAfterNeverZero(t *testing.T) {
	for _, w := range []time.Duration{time.Nanosecond, 999 * time.Millisecond, time.Second, time.Second + 1} {
		h := httplimit.Middleware(rvZeroLimiter{w}, byIP(t))(ok)
		rec := rvServe(h, "192.0.2.1:1")
		assert.Equal(t, 429, rec.Code, "%v", w)
		want := "1"
		if w > time.Second {
			want = "2"
		}
		assert.Equal(t, want, rec.Header().Get("Retry-After"), "RetryAfter %v", w)
	}
}

func TestSemanticsForwardedForDefaultAndTrusted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerHour(1), 1)
		h := httplimit.Middleware(l, byIP(t))(ok)
		require.Equal(t, 200, rvServe(h, "192.0.2.1:1", "X-Forwarded-For", "203.0.113.1").Code)
		assert.Equal(t, 429, rvServe(h, "192.0.2.1:2", "X-Forwarded-For", "203.0.113.2").Code)

		l2 := gcraLimiter(t, algorithms.PerHour(1), 1)
		h2 := httplimit.Middleware(l2, byIP(t, httplimit.TrustProxies("10.0.0.0/8")))(ok)
		// multiple header lines: the right-most untrusted across lines
		require.Equal(t, 200, rvServe(h2, "10.0.0.1:1", "X-Forwarded-For", "1.1.1.1", "X-Forwarded-For", "203.0.113.5, 10.2.2.2").Code)
		assert.Equal(t, 429, rvServe(h2, "10.0.0.1:1", "X-Forwarded-For", "203.0.113.5").Code)
		// untrusted peer's XFF is ignored: keyed by the peer
		require.Equal(t, 200, rvServe(h2, "192.0.2.9:1", "X-Forwarded-For", "203.0.113.5").Code)
		assert.Equal(t, 429, rvServe(h2, "192.0.2.9:1", "X-Forwarded-For", "203.0.113.77").Code)
		// IPv6 /64
		require.Equal(t, 200, rvServe(h2, "[2001:db8:1:2::1]:80").Code)
		assert.Equal(t, 429, rvServe(h2, "[2001:db8:1:2:ffff::9]:80").Code)
		assert.Equal(t, 200, rvServe(h2, "[2001:db8:1:3::1]:80").Code)
		// IPv4-mapped is IPv4
		require.Equal(t, 200, rvServe(h2, "[::ffff:198.51.100.7]:80").Code)
		assert.Equal(t, 429, rvServe(h2, "198.51.100.7:81").Code)
	})
}

func TestSemanticsDeniedHandlerSeesFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.Every(1500*time.Millisecond), 1)
		var seen http.Header
		var d httplimit.Denial
		h := httplimit.Middleware(l, byIP(t), httplimit.WithPolicy("p"), httplimit.WithDeniedHandler(func(w http.ResponseWriter, r *http.Request, dd httplimit.Denial) {
			seen = w.Header().Clone()
			d = dd
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "busy")
		}))(ok)
		require.Equal(t, 200, rvServe(h, "192.0.2.1:1").Code)
		rec := rvServe(h, "192.0.2.1:1")
		assert.Equal(t, 503, rec.Code)
		assert.Equal(t, "busy", rec.Body.String())
		assert.Equal(t, "2", seen.Get("Retry-After"))
		assert.Equal(t, `"p";r=0;t=2`, seen.Get("RateLimit"))
		assert.Equal(t, `"p";q=1;w=2`, seen.Get("RateLimit-Policy"))
		assert.Equal(t, 1500*time.Millisecond, d.RetryAfter)
		assert.Equal(t, "ip:192.0.2.1", d.Key)
		assert.Equal(t, int64(0), d.Quota.Remaining)
		assert.ErrorIs(t, d.Err, permits.ErrRateLimited)
	})
}

func TestSemanticsConcurrentOneKeyExactlyTheLimit(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerHour(20), 20)
	var served atomic.Int64
	h := httplimit.Middleware(l, httplimit.KeyByHeader("X-User"))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	var wg sync.WaitGroup
	var n200, n429 atomic.Int64
	remaining := make(chan string, 200)
	for range 200 {
		wg.Go(func() {
			rec := rvServe(h, "", "X-User", "u")
			switch rec.Code {
			case 200:
				n200.Add(1)
				remaining <- rec.Header().Get("RateLimit")
			case 429:
				n429.Add(1)
			}
		})
	}
	wg.Wait()
	close(remaining)
	assert.Equal(t, int64(20), n200.Load())
	assert.Equal(t, int64(180), n429.Load())
	assert.Equal(t, int64(20), served.Load())
	rs := map[string]bool{}
	for v := range remaining {
		ls, err := httplimit.ParseServiceLimits(v)
		require.NoError(t, err)
		rs[fmt.Sprint(ls[0].Remaining)] = true
	}
	assert.Len(t, rs, 20, "each grant saw a distinct remaining count: %v", rs)
}

func TestSemanticsWaitHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerSecond(1), 1)
		h := httplimit.Middleware(l, byIP(t), httplimit.WithWait(time.Second))(ok)
		require.Equal(t, 200, rvServe(h, "192.0.2.1:1").Code)
		start := time.Now()
		rec := rvServe(h, "192.0.2.1:1") // predicted wait exactly 1s == max
		el := time.Since(start)
		t.Logf("code %d after %v headers %v", rec.Code, el, rec.Header())
		if rec.Code == 200 {
			assert.Equal(t, time.Second, el)
			assert.Equal(t, `"default";r=0;t=1`, rec.Header().Get("RateLimit"))
		} else {
			assert.Equal(t, 429, rec.Code)
			ra := rec.Header().Get("Retry-After")
			assert.NotEqual(t, "0", ra)
			if rl := rec.Header().Get("RateLimit"); rl != "" {
				assert.Equal(t, `"default";r=0;t=`+ra, rl, "t agrees with Retry-After")
			}
		}
		// predicted wait 2s > 1s: refused at once with Retry-After of the prediction
		synctest.Wait()
		var wg sync.WaitGroup
		var first *httptest.ResponseRecorder
		wg.Go(func() { first = rvServe(h, "192.0.2.1:1") })
		synctest.Wait()
		start = time.Now()
		rec = rvServe(h, "192.0.2.1:1")
		assert.Equal(t, time.Duration(0), time.Since(start))
		assert.Equal(t, 429, rec.Code)
		ra := rec.Header().Get("Retry-After")
		assert.Equal(t, "2", ra)
		if rl := rec.Header().Get("RateLimit"); rl != "" {
			assert.Equal(t, `"default";r=0;t=`+ra, rl)
		}
		wg.Wait()
		assert.Equal(t, 200, first.Code)
	})
}

func TestSemanticsPanickingHandlerRealServer(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerHour(3), 3)
	srv := httptest.NewUnstartedServer(httplimit.Middleware(l, byIP(t))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic(http.ErrAbortHandler)
		}
		w.Header().Set("X-Late", "1")
		w.WriteHeader(201)
		_, _ = io.WriteString(w, "late")
	})))
	srv.Config.ErrorLog = nil
	srv.Start()
	defer srv.Close()
	c := srv.Client()
	_, err := c.Get(srv.URL + "/panic")
	assert.Error(t, err)
	resp, body := get(t, c, srv.URL+"/", nil)
	assert.Equal(t, 201, resp.StatusCode)
	assert.Equal(t, "late", body)
	assert.Equal(t, `"default";r=1;t=2400`, resp.Header.Get("RateLimit"))
	c.CloseIdleConnections()
}

// Transport

func TestSemanticsOne429ThenSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			if n == 0 {
				return reply(429, "slow down", "Retry-After", "2"), nil
			}
			return reply(200, "fine"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api))
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
		assert.Equal(t, httplimit.TransportStats{Requests: 1, Attempts: 2, Retries: 1, Throttled: 1, Pauses: 1}, st)
	})
}

type rvCountingBody struct {
	io.Reader
	closed atomic.Int64
}

func (b *rvCountingBody) Close() error { b.closed.Add(1); return nil }

func TestSemanticsNonReplayablePostHandedBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			return reply(429, "no", "Retry-After", "1"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api))
		require.NoError(t, err)
		b := &rvCountingBody{Reader: strings.NewReader("x")}
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

func TestSemanticsNetworkErrorPostNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) { return nil, boom }}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api))
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

func TestSemanticsCancelDuringPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			return reply(429, "no", "Retry-After", "10"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api))
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
func TestSemanticsAWaitFromAFieldOrADatePauses(t *testing.T) {
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
				tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api))
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

func TestSemanticsCappedPauseHandsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			return reply(429, "later", "Retry-After", "3600"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api), httplimit.WithMaxPause(5*time.Second))
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

func TestSemanticsLoopbackServerAndTransport(t *testing.T) {
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
	tr, err := httplimit.NewTransport(lim, httplimit.WithBase(base))
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

func TestSemanticsWaitRefusalCarriesFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerSecond(1), 1)
		h := httplimit.Middleware(l, byIP(t), httplimit.WithWait(500*time.Millisecond))(ok)
		require.Equal(t, 200, rvServe(h, "192.0.2.1:1").Code)
		rec := rvServe(h, "192.0.2.1:1")
		assert.Equal(t, 429, rec.Code)
		assert.Equal(t, "1", rec.Header().Get("Retry-After"))
		assert.Equal(t, `"default";r=0;t=1`, rec.Header().Get("RateLimit"))
		assert.Equal(t, `"default";q=1;w=1`, rec.Header().Get("RateLimit-Policy"))

		// A request context deadline shorter than the wait (WithWait(-1)).
		h2 := httplimit.Middleware(l, byIP(t), httplimit.WithWait(-1))(ok)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		rec = httptest.NewRecorder()
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
		req.RemoteAddr = "192.0.2.1:1"
		h2.ServeHTTP(rec, req)
		assert.Equal(t, 429, rec.Code, rec.Body.String())
		assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	})
}

func TestSemanticsWaitFIFOAndKeysIndependent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerSecond(1), 1)
		h := httplimit.Middleware(l, httplimit.KeyByHeader("X-User"), httplimit.WithWait(-1))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, r.Header.Get("X-N"))
		}))
		start := time.Now()
		var mu sync.Mutex
		var order []string
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() {
				rec := rvServe(h, "", "X-User", "a", "X-N", fmt.Sprint(i))
				mu.Lock()
				order = append(order, fmt.Sprintf("%s@%v", rec.Body.String(), time.Since(start)))
				mu.Unlock()
			})
			synctest.Wait()
		}
		// b is not held up by a's queue
		rec := rvServe(h, "", "X-User", "b", "X-N", "b")
		assert.Equal(t, 200, rec.Code)
		assert.Equal(t, time.Duration(0), time.Since(start))
		wg.Wait()
		assert.Equal(t, []string{"0@0s", "1@1s", "2@2s", "3@3s", "4@4s"}, order)
	})
}

func TestSemanticsWaitRetimedPastBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerSecond(1), 1)
		h := httplimit.Middleware(l, httplimit.KeyByHeader("X-User"), httplimit.WithWait(1500*time.Millisecond))(ok)
		require.Equal(t, 200, rvServe(h, "", "X-User", "a").Code)
		var rec *httptest.ResponseRecorder
		var wg sync.WaitGroup
		start := time.Now()
		wg.Go(func() { rec = rvServe(h, "", "X-User", "a") })
		synctest.Wait()
		require.NoError(t, l.SetRate("header:X-User:a", algorithms.Every(10*time.Second)))
		wg.Wait()
		t.Logf("after %v: %d %v %s", time.Since(start), rec.Code, rec.Header(), rec.Body.String())
		assert.Equal(t, 429, rec.Code)
		ra := rec.Header().Get("Retry-After")
		assert.NotEqual(t, "0", ra)
		if rl := rec.Header().Get("RateLimit"); rl != "" {
			ls, err := httplimit.ParseServiceLimits(rl)
			require.NoError(t, err)
			assert.Equal(t, ra, fmt.Sprint(int64(ls[0].Reset/time.Second)), "t agrees with Retry-After")
		}
	})
}

func TestSemantics503BackoffAndStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			if n == 0 {
				return reply(503, "down"), nil
			}
			return reply(200, "ok"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api))
		require.NoError(t, err)
		req, _ := http.NewRequest(http.MethodGet, "http://api/x", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp))
		assert.Equal(t, httplimit.TransportStats{Requests: 1, Attempts: 2, Retries: 1, Unavailable: 1}, tr.Stats())
		assert.Equal(t, []int64{1, 1}, api.closes())
	})
}

func TestSemanticsIdempotencyKeyAndExhaustion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			return reply(429, fmt.Sprint("r", n), "Retry-After", "1"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api))
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

func TestSemanticsDeadlineInsideAPauseSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			if n == 0 {
				return reply(429, "", "Retry-After", "10"), nil
			}
			return reply(200, "ok"), nil
		}}
		lim := newLimiter(t, algorithms.PerSecond(100), 10)
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api), httplimit.WithRetry(retry.WithMaxAttempts(1)))
		require.NoError(t, err)
		req, _ := http.NewRequest(http.MethodGet, "http://api/x", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readAll(t, resp)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		b := &rvCountingBody{Reader: strings.NewReader("x")}
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

func TestSemantics413Fields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerSecond(1), 5)
		h := httplimit.Middleware(l, byIP(t), httplimit.WithCost(func(r *http.Request) int64 {
			if r.URL.Path == "/big" {
				return 6
			}
			return 1
		}))(ok)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/big", nil)
		h.ServeHTTP(rec, req)
		t.Logf("%d %v", rec.Code, rec.Header())
		assert.Equal(t, 413, rec.Code)
		if rl := rec.Header().Get("RateLimit"); rl != "" {
			assert.Equal(t, `"default";r=5;t=0`, rl, "the key is untouched: all 5 remain")
		}
		if pol := rec.Header().Get("RateLimit-Policy"); pol != "" {
			assert.Equal(t, `"default";q=5;w=5`, pol, "the same policy as on every other response")
		}
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		assert.Equal(t, `"default";r=4;t=1`, rec.Header().Get("RateLimit"))
		assert.Equal(t, `"default";q=5;w=5`, rec.Header().Get("RateLimit-Policy"))
	})
}

func TestSemanticsTransportConcurrent429s(t *testing.T) {
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
		tr, err := httplimit.NewTransport(lim, httplimit.WithBase(api))
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
