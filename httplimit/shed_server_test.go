package httplimit_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/httplimit"
)

// Over a real server on loopback, with the rate limit in front: the
// route's two slots held by requests its handler keeps, a third request
// is shed with 503, Retry-After and the problem body, and once they end
// the route serves again.
func TestShedderOverARealServerOnLoopback(t *testing.T) {
	mux := http.NewServeMux()
	entered, release := make(chan struct{}), make(chan struct{})
	mux.HandleFunc("GET /work", func(http.ResponseWriter, *http.Request) {
		entered <- struct{}{}
		<-release
	})
	s, err := httplimit.NewShedder(httplimit.KeyByRoute(mux), aimd, httplimit.WithPoolOptions(fixedLimit(2)))
	require.NoError(t, err)
	defer s.Close()
	byIP, err := httplimit.KeyByIP()
	require.NoError(t, err)
	srv := httptest.NewServer(httplimit.Middleware(perMinute(t, 100), byIP, httplimit.WithShedder(s))(mux))
	defer srv.Close()

	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/work")
			if assert.NoError(t, err) {
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				_ = resp.Body.Close()
			}
		})
		<-entered
	}
	resp, err := http.Get(srv.URL + "/work")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	var p httplimit.Problem
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	assert.Equal(t, http.StatusServiceUnavailable, p.Status)
	assert.Contains(t, p.Detail, `route "route:GET /work" has 2 requests in flight`)
	close(release)
	wg.Wait()

	go func() { <-entered }()
	resp2, err := http.Get(srv.URL + "/work")
	require.NoError(t, err)
	_ = resp2.Body.Close()
	assert.Equal(t, http.StatusOK, resp2.StatusCode)
}
