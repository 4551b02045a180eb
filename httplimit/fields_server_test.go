package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
)

// everyone keys every request alike: a global limit.
func everyone(*http.Request) (string, error) { return "all", nil }

func TestStackedLimitsEachAddTheirMember(t *testing.T) {
	global := gcraLimiter(t, algorithms.PerMinute(100), 100)
	perIP := gcraLimiter(t, algorithms.PerHour(1), 1)
	inner := httplimit.Middleware(perIP, byIP(t), httplimit.WithPolicy("per-ip"))(ok)
	srv := httptest.NewServer(httplimit.Middleware(global, everyone, httplimit.WithPolicy("global"))(inner))
	defer srv.Close()

	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		resp, _ := get(t, srv.Client(), srv.URL, nil)
		require.Equal(t, want, resp.StatusCode, "request %d", i)
		policies, err := httplimit.ParsePolicies(resp.Header.Values("RateLimit-Policy")...)
		require.NoError(t, err)
		limits, err := httplimit.ParseServiceLimits(resp.Header.Values("RateLimit")...)
		require.NoError(t, err)
		require.Len(t, policies, 2, "one member per policy: %v", resp.Header)
		require.Len(t, limits, 2)
		assert.Equal(t, []string{"global", "per-ip"}, []string{policies[0].Name, policies[1].Name})
		assert.Equal(t, []int64{100, 1}, []int64{policies[0].Quota, policies[1].Quota})
		assert.Equal(t, []string{"global", "per-ip"}, []string{limits[0].Name, limits[1].Name})
		assert.Equal(t, int64(99-i), limits[0].Remaining, "the global limit counted both")
		assert.Equal(t, int64(0), limits[1].Remaining)
	}
}

// The X-RateLimit fields hold one limit: with limits stacked, the one
// with the least remaining, whichever of the two is inside. Before, the
// inner limit's fields overwrote the outer's.
func TestStackedXRateLimitFieldsSayTheTighterLimit(t *testing.T) {
	for _, tc := range []struct {
		name          string
		outer, inner  *keyed.Limiter[string]
		wantLimit     string
		wantRemaining string
	}{
		{"outer tighter", gcraLimiter(t, algorithms.PerHour(2), 2), gcraLimiter(t, algorithms.PerMinute(100), 100), "2", "1"},
		{"inner tighter", gcraLimiter(t, algorithms.PerMinute(100), 100), gcraLimiter(t, algorithms.PerHour(2), 2), "2", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := httplimit.Middleware(tc.inner, byIP(t), httplimit.WithPolicy("inner"), httplimit.WithXRateLimitFields())(ok)
			srv := httptest.NewServer(httplimit.Middleware(tc.outer, everyone, httplimit.WithPolicy("outer"), httplimit.WithXRateLimitFields())(inner))
			defer srv.Close()
			resp, _ := get(t, srv.Client(), srv.URL, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, []string{tc.wantLimit}, resp.Header.Values("X-RateLimit-Limit"))
			assert.Equal(t, []string{tc.wantRemaining}, resp.Header.Values("X-RateLimit-Remaining"))
			assert.Len(t, resp.Header.Values("X-RateLimit-Reset"), 1)
		})
	}
}

func TestARefusalThatRoundsToNothingSaysRetryAfterOne(t *testing.T) {
	srv := httptest.NewServer(httplimit.Middleware(refusingLimiter{0}, byIP(t))(ok))
	defer srv.Close()
	resp, _ := get(t, srv.Client(), srv.URL, nil)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"), "0 would ask the client to come back at once")
}

func TestQuotasBeyondFifteenDigitsParseBack(t *testing.T) {
	const huge = 10_000_000_000_000_000 // 17 digits
	l := gcraLimiter(t, algorithms.PerSecond(huge), huge)
	srv := httptest.NewServer(httplimit.Middleware(l, byIP(t))(ok))
	defer srv.Close()
	resp, _ := get(t, srv.Client(), srv.URL, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	policies, err := httplimit.ParsePolicies(resp.Header.Values("RateLimit-Policy")...)
	require.NoError(t, err, "%v", resp.Header)
	assert.Equal(t, int64(httplimit.MaxInteger), policies[0].Quota)
	limits, err := httplimit.ParseServiceLimits(resp.Header.Values("RateLimit")...)
	require.NoError(t, err, "%v", resp.Header)
	assert.Equal(t, int64(httplimit.MaxInteger), limits[0].Remaining)

	_, err = httplimit.ParsePolicies(httplimit.FormatPolicy(httplimit.Policy{Name: "p", Quota: 1 << 62}))
	assert.NoError(t, err)
	_, err = httplimit.ParseServiceLimits(httplimit.FormatServiceLimit(httplimit.ServiceLimit{Name: "p", Remaining: 1 << 62}))
	assert.NoError(t, err)
}

func TestWithQuotaUnitAdvertisesTheUnit(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerMinute(1<<20), 1<<20)
	byBody := httplimit.WithCost(func(r *http.Request) int64 { return max(r.ContentLength, 1) })
	srv := httptest.NewServer(httplimit.Middleware(l, byIP(t), byBody, httplimit.WithQuotaUnit("content-bytes"))(ok))
	defer srv.Close()
	resp, _ := get(t, srv.Client(), srv.URL, nil)
	assert.Equal(t, `"default";q=1048576;qu="content-bytes";w=60`, resp.Header.Get("RateLimit-Policy"))
	policies, err := httplimit.ParsePolicies(resp.Header.Values("RateLimit-Policy")...)
	require.NoError(t, err)
	assert.Equal(t, "content-bytes", policies[0].Unit)
}

func TestAUnixResetKeepsItsFraction(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", "1800000010.5")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	resp, _ := get(t, srv.Client(), srv.URL, nil)
	wait, found := httplimit.ParseWait(resp.Header, t0)
	assert.True(t, found)
	assert.Equal(t, 10500*time.Millisecond, wait)
}
