package httplimit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/permits"
)

// WithWindow is the w that RateLimit-Policy advertises, in place of the
// time the key's limit takes to refill (60 s for 100 a minute).
func TestWithWindowSetsThePolicysWindow(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerMinute(100), 100)
	srv := httptest.NewServer(httplimit.Middleware(l, byIP(t), httplimit.WithPolicy("api"), httplimit.WithWindow(90*time.Second))(ok))
	defer srv.Close()
	resp, _ := get(t, srv.Client(), srv.URL, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, `"api";q=100;w=90`, resp.Header.Get("RateLimit-Policy"))
}

// WithErrorHandler answers the requests the middleware cannot decide on, in
// place of its 400 and 413, with the error that says why.
func TestWithErrorHandlerAnswersWhatCannotBeDecided(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerMinute(100), 100)
	var mu sync.Mutex // the handler runs on the server's goroutines
	var got []error
	h := httplimit.Middleware(l, httplimit.KeyByHeader("X-API-Key"),
		httplimit.WithCost(func(r *http.Request) int64 {
			if r.URL.Path == "/huge" {
				return 1000
			}
			return 1
		}),
		httplimit.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
			mu.Lock()
			got = append(got, err)
			mu.Unlock()
			w.WriteHeader(http.StatusTeapot)
		}))(ok)
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := srv.Client()

	resp, _ := get(t, c, srv.URL, nil) // no key
	assert.Equal(t, http.StatusTeapot, resp.StatusCode)
	resp, _ = get(t, c, srv.URL+"/huge", map[string]string{"X-API-Key": "k"}) // above the capacity
	assert.Equal(t, http.StatusTeapot, resp.StatusCode)
	resp, body := get(t, c, srv.URL, map[string]string{"X-API-Key": "k"})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok\n", body)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 2)
	assert.ErrorIs(t, got[0], httplimit.ErrNoKey)
	assert.ErrorIs(t, got[1], permits.ErrCostExceedsCapacity)
	assert.False(t, errors.Is(got[1], httplimit.ErrNoKey))
}
