package httplimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
)

func serveFrom(h http.Handler, remote string, hdr ...string) *httptest.ResponseRecorder {
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

func TestRemainingCountsDownExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerMinute(10), 10)
		h := httplimit.Middleware(l, byIP(t))(ok)
		for i := 1; i <= 10; i++ {
			rec := serveFrom(h, "192.0.2.1:1234")
			require.Equal(t, 200, rec.Code)
			assert.Equal(t, `"default";q=10;w=60`, rec.Header().Get("RateLimit-Policy"))
			// t is the effective window: the next unit comes back in 6 s,
			// however many are lacking.
			assert.Equal(t, fmt.Sprintf(`"default";r=%d;t=6`, 10-i), rec.Header().Get("RateLimit"), "after %d", i)
			assert.Empty(t, rec.Header().Get("Retry-After"))
		}
		rec := serveFrom(h, "192.0.2.1:1234")
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
		rec = serveFrom(h, "192.0.2.2:1234")
		assert.Equal(t, 200, rec.Code)
		assert.Equal(t, `"default";r=9;t=6`, rec.Header().Get("RateLimit"))

		time.Sleep(5500 * time.Millisecond)
		rec = serveFrom(h, "192.0.2.1:9999")
		require.Equal(t, 429, rec.Code)
		assert.Equal(t, "1", rec.Header().Get("Retry-After"))
		assert.Equal(t, `"default";r=0;t=1`, rec.Header().Get("RateLimit"))
		time.Sleep(500 * time.Millisecond)
		rec = serveFrom(h, "192.0.2.1:9999")
		require.Equal(t, 200, rec.Code)
		assert.Equal(t, `"default";r=0;t=6`, rec.Header().Get("RateLimit"))
	})
}

// A limiter whose refusal says a wait shorter than anything, or none.
type refusingLimiter struct{ wait time.Duration }

func (refusingLimiter) Acquire(ctx context.Context, key string, cost int64) (permits.Permit, error) {
	return permits.Permit{}, errors.New("unused")
}

func (z refusingLimiter) TryAcquire(key string, cost int64) (permits.Permit, error) {
	return permits.Permit{}, &permits.RateLimitError{RetryAfter: z.wait}
}

func TestRetryAfterIsNeverZero(t *testing.T) {
	for _, w := range []time.Duration{time.Nanosecond, 999 * time.Millisecond, time.Second, time.Second + 1} {
		h := httplimit.Middleware(refusingLimiter{w}, byIP(t))(ok)
		rec := serveFrom(h, "192.0.2.1:1")
		assert.Equal(t, 429, rec.Code, "%v", w)
		want := "1"
		if w > time.Second {
			want = "2"
		}
		assert.Equal(t, want, rec.Header().Get("Retry-After"), "RetryAfter %v", w)
	}
}

func TestForwardedForIsReadOnlyFromTrustedProxies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerHour(1), 1)
		h := httplimit.Middleware(l, byIP(t))(ok)
		require.Equal(t, 200, serveFrom(h, "192.0.2.1:1", "X-Forwarded-For", "203.0.113.1").Code)
		assert.Equal(t, 429, serveFrom(h, "192.0.2.1:2", "X-Forwarded-For", "203.0.113.2").Code)

		l2 := gcraLimiter(t, algorithms.PerHour(1), 1)
		h2 := httplimit.Middleware(l2, byIP(t, httplimit.TrustProxies("10.0.0.0/8")))(ok)
		// multiple header lines: the right-most untrusted across lines
		require.Equal(t, 200, serveFrom(h2, "10.0.0.1:1", "X-Forwarded-For", "1.1.1.1", "X-Forwarded-For", "203.0.113.5, 10.2.2.2").Code)
		assert.Equal(t, 429, serveFrom(h2, "10.0.0.1:1", "X-Forwarded-For", "203.0.113.5").Code)
		// untrusted peer's XFF is ignored: keyed by the peer
		require.Equal(t, 200, serveFrom(h2, "192.0.2.9:1", "X-Forwarded-For", "203.0.113.5").Code)
		assert.Equal(t, 429, serveFrom(h2, "192.0.2.9:1", "X-Forwarded-For", "203.0.113.77").Code)
		// IPv6 /64
		require.Equal(t, 200, serveFrom(h2, "[2001:db8:1:2::1]:80").Code)
		assert.Equal(t, 429, serveFrom(h2, "[2001:db8:1:2:ffff::9]:80").Code)
		assert.Equal(t, 200, serveFrom(h2, "[2001:db8:1:3::1]:80").Code)
		// IPv4-mapped is IPv4
		require.Equal(t, 200, serveFrom(h2, "[::ffff:198.51.100.7]:80").Code)
		assert.Equal(t, 429, serveFrom(h2, "198.51.100.7:81").Code)
	})
}

func TestTheDeniedHandlerSeesTheFields(t *testing.T) {
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
		require.Equal(t, 200, serveFrom(h, "192.0.2.1:1").Code)
		rec := serveFrom(h, "192.0.2.1:1")
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

func TestConcurrentCallersOfOneKeyGetExactlyTheLimit(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerHour(20), 20)
	var served atomic.Int64
	h := httplimit.Middleware(l, httplimit.KeyByHeader("X-User"))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	var wg sync.WaitGroup
	var n200, n429 atomic.Int64
	remaining := make(chan string, 200)
	for range 200 {
		wg.Go(func() {
			rec := serveFrom(h, "", "X-User", "u")
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

func TestAWaitedRequestCarriesTheFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerSecond(1), 1)
		h := httplimit.Middleware(l, byIP(t), httplimit.WithWait(time.Second))(ok)
		require.Equal(t, 200, serveFrom(h, "192.0.2.1:1").Code)
		start := time.Now()
		rec := serveFrom(h, "192.0.2.1:1") // predicted wait exactly 1s == max
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
		wg.Go(func() { first = serveFrom(h, "192.0.2.1:1") })
		synctest.Wait()
		start = time.Now()
		rec = serveFrom(h, "192.0.2.1:1")
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

func TestAPanickingHandlerKeepsItsGrant(t *testing.T) {
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
	assert.Equal(t, `"default";r=1;t=1200`, resp.Header.Get("RateLimit"), "the next unit in 20 min")
	c.CloseIdleConnections()
}

func TestAWaitRefusalCarriesTheFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerSecond(1), 1)
		h := httplimit.Middleware(l, byIP(t), httplimit.WithWait(500*time.Millisecond))(ok)
		require.Equal(t, 200, serveFrom(h, "192.0.2.1:1").Code)
		rec := serveFrom(h, "192.0.2.1:1")
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

func TestWaitersAreFIFOPerKeyAndKeysIndependent(t *testing.T) {
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
				rec := serveFrom(h, "", "X-User", "a", "X-N", fmt.Sprint(i))
				mu.Lock()
				order = append(order, fmt.Sprintf("%s@%v", rec.Body.String(), time.Since(start)))
				mu.Unlock()
			})
			synctest.Wait()
		}
		// b is not held up by a's queue
		rec := serveFrom(h, "", "X-User", "b", "X-N", "b")
		assert.Equal(t, 200, rec.Code)
		assert.Equal(t, time.Duration(0), time.Since(start))
		wg.Wait()
		assert.Equal(t, []string{"0@0s", "1@1s", "2@2s", "3@3s", "4@4s"}, order)
	})
}

func TestAWaiterRetimedPastItsBoundIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerSecond(1), 1)
		h := httplimit.Middleware(l, httplimit.KeyByHeader("X-User"), httplimit.WithWait(1500*time.Millisecond))(ok)
		require.Equal(t, 200, serveFrom(h, "", "X-User", "a").Code)
		var rec *httptest.ResponseRecorder
		var wg sync.WaitGroup
		start := time.Now()
		wg.Go(func() { rec = serveFrom(h, "", "X-User", "a") })
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

func TestA413CarriesNoFields(t *testing.T) {
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
