package httplimit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

func aimd() actor.Controller { return &actor.AIMD{} }

// byPath keys by the raw path: what a careless key function does, and
// what a hostile client can make unique on every request.
func byPath(r *http.Request) (string, error) { return r.URL.Path, nil }

// fixed is a Shedder whose every route's limit is n and stays n.
func fixed(t *testing.T, n int64, opts ...httplimit.ShedOption) *httplimit.Shedder {
	t.Helper()
	s, err := httplimit.NewShedder(byPath, aimd, append(opts, httplimit.WithPoolOptions(fixedLimit(n)))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fixedLimit is a pool whose limit is n and stays n.
func fixedLimit(n int64) actor.AdaptiveOption { return actor.WithLimits(n, n, n) }

// serve1 serves one GET of path through h and returns the recorded response.
func serve1(h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// sleeper answers each request after d with status code.
func sleeper(d time.Duration, code *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(d)
		w.WriteHeader(int(code.Load()))
	})
}

// load runs workers loops of requests to "/" through h for d; a shed
// request is retried 1 ms later (as a client backing off would), so that
// virtual time moves.
func load(h http.Handler, workers int, d time.Duration) (served, shed int64) {
	var nServed, nShed atomic.Int64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(end) {
				rec := serve1(h, "/")
				if rec.Header().Get("Retry-After") != "" {
					nShed.Add(1)
					time.Sleep(time.Millisecond)
					continue
				}
				nServed.Add(1)
			}
		})
	}
	wg.Wait()
	return nServed.Load(), nShed.Load()
}

func TestShedderLimitFallsOnOverloadAndRisesOnSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := httplimit.NewShedder(byPath, aimd, httplimit.WithPoolOptions(actor.WithLimits(1, 20, 100)))
		require.NoError(t, err)
		defer s.Close()
		var code atomic.Int64
		code.Store(http.StatusServiceUnavailable)
		h := s.Handler(sleeper(10*time.Millisecond, &code))

		load(h, 20, time.Second)
		low, ok := s.RouteConcurrency("/")
		require.True(t, ok)
		assert.Less(t, low.Size, int64(20), "the handler's 503s lowered the limit")
		assert.Positive(t, low.Signals)

		code.Store(http.StatusOK)
		_, shed := load(h, 60, 2*time.Second)
		high, _ := s.RouteConcurrency("/")
		t.Logf("limit %d after overload, %d after success; %d shed", low.Size, high.Size, shed)
		assert.Greater(t, high.Size, low.Size+10, "successes with the route full raised it")
		assert.Positive(t, shed, "60 callers do not fit under the limit: it shed")
		assert.LessOrEqual(t, high.InFlight, high.Ceiling)
	})
}

func TestShedderShedsPastTheLimitWithRetryAfterOfTheRoutesHandlerTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixed(t, 2)
		var code atomic.Int64
		code.Store(http.StatusOK)
		h := s.Handler(sleeper(2500*time.Millisecond, &code))
		require.Equal(t, http.StatusOK, serve1(h, "/slow").Code) // the route's handler time: 2.5 s

		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { assert.Equal(t, http.StatusOK, serve1(h, "/slow").Code) })
		}
		synctest.Wait() // both hold the route's two slots
		rec := serve1(h, "/slow")
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Equal(t, "3", rec.Header().Get("Retry-After"), "2.5 s rounded up")
		assert.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
		assert.Contains(t, rec.Body.String(), `"status":503`)
		assert.Equal(t, http.StatusOK, serve1(h, "/other").Code, "another route has slots of its own")
		wg.Wait()
		assert.Equal(t, http.StatusOK, serve1(h, "/slow").Code, "slots come back when requests end")
		st, _ := s.RouteConcurrency("/slow")
		assert.Equal(t, uint64(1), st.Rejected)
	})
}

func TestShedderRetryAfterIsOneSecondAtLeast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixed(t, 1)
		release := make(chan struct{})
		h := s.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
		go serve1(h, "/")
		synctest.Wait()
		rec := serve1(h, "/") // no handler time yet: the route has none to go by
		assert.Equal(t, "1", rec.Header().Get("Retry-After"))
		close(release)
	})
}

func TestShedWaitServesWithinTheBoundAndShedsPastIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			wait time.Duration
			want int
		}{{time.Second, http.StatusOK}, {50 * time.Millisecond, http.StatusServiceUnavailable}, {0, http.StatusServiceUnavailable}} {
			s := fixed(t, 1, httplimit.WithShedWait(c.wait))
			var code atomic.Int64
			code.Store(http.StatusOK)
			h := s.Handler(sleeper(100*time.Millisecond, &code))
			var wg sync.WaitGroup
			wg.Go(func() { serve1(h, "/") })
			synctest.Wait()
			assert.Equal(t, c.want, serve1(h, "/").Code, "wait %v for a slot busy 100 ms", c.wait)
			wg.Wait()
			_ = s.Close()
		}
	})
}

func TestShedWaitAClientThatGoesAwayGetsNoResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixed(t, 1, httplimit.WithShedWait(-1))
		release := make(chan struct{})
		var calls atomic.Int64
		h := s.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1); <-release }))
		go serve1(h, "/")
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		}()
		synctest.Wait()
		cancel()
		<-done
		assert.False(t, rec.Flushed)
		assert.Empty(t, rec.Body.String())
		assert.Empty(t, rec.Header(), "nothing written")
		assert.Equal(t, int64(1), calls.Load())
		close(release)
	})
}

func TestShedderReportsEachOutcome(t *testing.T) {
	for _, c := range []struct {
		name             string
		handler          http.HandlerFunc
		samples, signals int64
	}{
		{"200 is a success", func(http.ResponseWriter, *http.Request) { time.Sleep(time.Millisecond) }, 1, 0},
		{"404 is a success", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(404) }, 1, 0},
		{"503 is overload", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }, 1, 1},
		{"429 is overload", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(429) }, 1, 1},
		{"504 is a timeout", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(504) }, 1, 1},
		{"500 says nothing", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := fixed(t, 4)
				serve1(s.Handler(c.handler), "/")
				time.Sleep(10 * time.Millisecond) // the owner gathers outcomes for 1 ms
				st, _ := s.RouteConcurrency("/")
				assert.Equal(t, c.samples, st.Samples)
				assert.Equal(t, c.signals, st.Signals)
				assert.Zero(t, st.InFlight)
			})
		})
	}
}

func TestShedderAPanicGivesTheSlotBackAndSaysNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixed(t, 1)
		h := s.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
		assert.PanicsWithValue(t, http.ErrAbortHandler, func() { serve1(h, "/") })
		time.Sleep(10 * time.Millisecond)
		st, _ := s.RouteConcurrency("/")
		assert.Zero(t, st.InFlight)
		assert.Zero(t, st.Samples)
	})
}

func TestShedderAClientGoneMidRequestIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixed(t, 1)
		ctx, cancel := context.WithCancel(t.Context())
		h := s.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cancel()
			<-r.Context().Done()
			w.WriteHeader(503) // what a handler whose client left may well say
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		time.Sleep(10 * time.Millisecond)
		st, _ := s.RouteConcurrency("/")
		assert.Zero(t, st.Samples)
		assert.Zero(t, st.Signals, "not an overload of the route's making")
	})
}

func TestShedderBoundsTheRoutesHostilePathsMake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixed(t, 8, httplimit.WithMaxRoutes(4))
		h := s.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		for i := range 1000 {
			require.Equal(t, http.StatusOK, serve1(h, fmt.Sprintf("/x/%d", i)).Code)
		}
		assert.Equal(t, 4, s.Routes())
		st, ok := s.RouteConcurrency(httplimit.OverflowRoute)
		require.True(t, ok)
		assert.Equal(t, uint64(996), st.Granted, "every route past the bound shares one pool")
		_, ok = s.RouteConcurrency("/x/999")
		assert.False(t, ok)
	})
}

func TestShedderByKeyByRouteHasOneRoutePerPattern(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /items/{id}", func(http.ResponseWriter, *http.Request) {})
		s, err := httplimit.NewShedder(httplimit.KeyByRoute(mux), aimd)
		require.NoError(t, err)
		defer s.Close()
		h := s.Handler(mux)
		for i := range 200 {
			serve1(h, fmt.Sprintf("/items/%d", i))
			serve1(h, fmt.Sprintf("/nowhere/%d/%%2e%%2e/", i))
		}
		assert.Equal(t, 2, s.Routes(), "the pattern, and one route for every path no pattern matches")
		_, ok := s.RouteConcurrency("route:GET /items/{id}")
		assert.True(t, ok)
	})
}

func TestShedderComposesAfterTheRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := perMinute(t, 1)
		s := fixed(t, 4)
		h := httplimit.Middleware(lim, byPath, httplimit.WithShedder(s))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		assert.Equal(t, http.StatusOK, serve1(h, "/").Code)
		assert.Equal(t, http.StatusTooManyRequests, serve1(h, "/").Code)
		st, _ := s.RouteConcurrency("/")
		assert.Equal(t, uint64(1), st.Granted, "a request over its quota never takes a slot")
	})
}

func TestShedderComposedShedsThroughTheErrorHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixed(t, 1)
		var got error
		h := httplimit.Middleware(perMinute(t, 100), byPath, httplimit.WithShedder(s),
			httplimit.WithErrorHandler(func(w http.ResponseWriter, _ *http.Request, err error) {
				got = err
				w.WriteHeader(http.StatusServiceUnavailable)
			}))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(time.Second) }))
		var wg sync.WaitGroup
		wg.Go(func() { serve1(h, "/") })
		synctest.Wait()
		rec := serve1(h, "/")
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Equal(t, "1", rec.Header().Get("Retry-After"))
		require.ErrorIs(t, got, httplimit.ErrOverloaded)
		var se *httplimit.ShedError
		require.True(t, errors.As(got, &se))
		assert.Equal(t, "/", se.Route)
		assert.Equal(t, int64(1), se.Limit)
		assert.NotEmpty(t, rec.Header().Get("RateLimit"), "the rate limit's fields stay")
		wg.Wait()
	})
}

func TestShedderClosedAnswers503(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixed(t, 1)
		h := s.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		require.NoError(t, s.Close())
		rec := serve1(h, "/")
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Empty(t, rec.Header().Get("Retry-After"), "no wait helps a closed server")
	})
}

func TestShedderBadConfigFails(t *testing.T) {
	for name, c := range map[string]struct {
		route httplimit.KeyFunc
		ctl   func() actor.Controller
		opt   httplimit.ShedOption
	}{
		"nil route":      {nil, aimd, nil},
		"nil controller": {byPath, nil, nil},
		"no routes":      {byPath, aimd, httplimit.WithMaxRoutes(0)},
		"bad limits":     {byPath, aimd, httplimit.WithPoolOptions(actor.WithLimits(5, 1, 10))},
		"bad controller": {byPath, func() actor.Controller { return &actor.AIMD{Backoff: 2} }, nil},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := httplimit.NewShedder(c.route, c.ctl, c.opt)
			assert.True(t, errors.Is(err, permits.ErrInvalidConfig), "%v", err)
		})
	}
}

// perMinute is a keyed limit of n requests a minute per key.
func perMinute(t *testing.T, n int64) *keyed.Limiter[string] {
	t.Helper()
	lim, err := keyed.NewGCRA[string](algorithms.PerMinute(n), n)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lim.Close() })
	return lim
}

// In shadow mode the requests the limit would refuse are served, so they
// take a slot as every served request does.
func TestShedderInShadowModeCountsTheRequestsTheLimitWouldRefuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fixed(t, 4)
		h := httplimit.Middleware(perMinute(t, 1), byPath, httplimit.WithShadow(nil), httplimit.WithShedder(s))(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		assert.Equal(t, http.StatusOK, serve1(h, "/").Code)
		assert.Equal(t, http.StatusOK, serve1(h, "/").Code)
		st, _ := s.RouteConcurrency("/")
		assert.Equal(t, uint64(2), st.Granted)
	})
}

// The writer the handler gets still flushes and hijacks, for streaming
// responses and WebSockets, both asserted and through ResponseController.
func TestShedderKeepsTheWritersFlushAndHijack(t *testing.T) {
	s := fixed(t, 4)
	srv := httptest.NewServer(s.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, flushes := w.(http.Flusher)
		_, hijacks := w.(http.Hijacker)
		assert.True(t, flushes && hijacks)
		if r.URL.Path == "/flush" {
			assert.NoError(t, http.NewResponseController(w).Flush())
			return
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if assert.NoError(t, err) {
			_, _ = c.Write([]byte("HTTP/1.1 204 No Content\r\n\r\n"))
			_ = c.Close()
		}
	})))
	defer srv.Close()
	for path, want := range map[string]int{"/flush": http.StatusOK, "/hijack": http.StatusNoContent} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, path)
	}
}
