package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
)

func TestARepeatedKeyHeaderIsKeyedByItsLastValue(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerHour(1), 1)
	srv := httptest.NewServer(httplimit.Middleware(l, httplimit.KeyByHeader("X-User"))(ok))
	defer srv.Close()
	send := func(users ...string) int {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		for _, u := range users {
			req.Header.Add("X-User", u) // one field line each
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	// The client wrote "victim"; the proxy in front appended "mallory".
	assert.Equal(t, http.StatusOK, send("victim", "mallory"))
	assert.Equal(t, http.StatusTooManyRequests, send("mallory"), "mallory's quota was spent")
	assert.Equal(t, http.StatusOK, send("victim"), "the victim's quota is untouched")
}
