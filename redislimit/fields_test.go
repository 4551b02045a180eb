package redislimit_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// fields is what a response says of its limit.
type fields struct {
	status            int
	policy, limit     string
	retryAfter        string
	xLimit, xRemained string
}

// serve starts a real server on loopback limiting by lim under one key,
// with the X-RateLimit fields too.
func serve(t *testing.T, lim permits.KeyedLimiter[string]) *httptest.Server {
	everyone := func(*http.Request) (string, error) { return "client", nil }
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv := httptest.NewServer(httplimit.Middleware(lim, everyone, httplimit.WithXRateLimitFields())(ok))
	t.Cleanup(srv.Close)
	return srv
}

func fetch(t *testing.T, srv *httptest.Server) fields {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	h := resp.Header
	return fields{resp.StatusCode, h.Get("RateLimit-Policy"), h.Get("RateLimit"), h.Get("Retry-After"),
		h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining")}
}

// Issue 27: two servers behind a load balancer, each with its own Keyed
// on one Redis, share one limit per client, and each response carries the
// RateLimit fields of the shared count, exactly as a keyed.Limiter's in
// one process would. 10 an hour, burst 10: a unit comes back every 6 min,
// so the milliseconds the test takes change no field.
func TestTwoServersOnOneRedisSendTheFieldsOfTheSharedLimit(t *testing.T) {
	server := redistest.Test(t)
	client := server.Client(t)
	rate, burst := algorithms.PerHour(10), int64(10)
	var fleet []*httptest.Server
	for range 2 {
		k, err := redislimit.NewKeyed(client, "api:", rate, burst)
		require.NoError(t, err)
		t.Cleanup(func() { k.Close() })
		fleet = append(fleet, serve(t, k))
	}
	local, err := keyed.New(func(string) (algorithms.Algorithm, error) { return algorithms.NewGCRA(rate, burst) })
	require.NoError(t, err)
	t.Cleanup(func() { local.Close() })
	alone := serve(t, local)

	for i := range 12 {
		got := fetch(t, fleet[i%2]) // the balancer alternates
		want := fields{http.StatusOK, `"default";q=10;w=3600`, fmt.Sprintf(`"default";r=%d;t=360`, 9-i), "", "10", fmt.Sprint(9 - i)}
		if i >= 10 {
			want.status, want.limit, want.retryAfter, want.xRemained = http.StatusTooManyRequests, `"default";r=0;t=360`, "360", "0"
		}
		assert.Equal(t, want, got, "request %d, to server %d", i, i%2)
		assert.Equal(t, fetch(t, alone), got, "request %d: as keyed.Limiter says in one process", i)
	}
}

// The Quota is the script's answer, read at Redis's instant: after n of
// the burst, Remaining is burst-n and Reset n units' time (less the time
// since), whichever process admitted them; a refusal's Reset is at least
// its RetryAfter; a cost the key can never admit says only Limit.
func TestKeyedQuotaIsTheSharedCount(t *testing.T) {
	server := redistest.Test(t)
	client := server.Client(t)
	const unit = time.Minute
	a, err := redislimit.NewKeyed(client, "q:", algorithms.Every(unit), 5)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	b, err := redislimit.NewKeyed(client, "q:", algorithms.Every(unit), 5)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })

	_, q, err := a.TryAcquireQuota("k", 2)
	require.NoError(t, err)
	assert.Equal(t, permits.Quota{Limit: 5, Remaining: 3, Reset: q.Reset, Window: 5 * unit}, q)
	assert.True(t, q.Reset > 2*unit-time.Second && q.Reset <= 2*unit, "Reset %v", q.Reset)

	_, q, err = b.TryAcquireQuota("k", 3) // the other process sees a's
	require.NoError(t, err)
	assert.Equal(t, int64(0), q.Remaining)
	assert.True(t, q.Reset > 5*unit-time.Second && q.Reset <= 5*unit, "Reset %v", q.Reset)

	_, q, err = a.TryAcquireQuota("k", 1)
	assert.ErrorIs(t, err, permits.ErrRateLimited)
	assert.Equal(t, int64(0), q.Remaining)
	assert.True(t, q.RetryAfter > unit-time.Second && q.RetryAfter <= unit, "RetryAfter %v", q.RetryAfter)
	assert.GreaterOrEqual(t, q.Reset, q.RetryAfter)
	d, _ := permits.RetryAfter(err)
	assert.Equal(t, d, q.RetryAfter, "the Quota and the error agree")

	_, q, err = a.TryAcquireQuota("k", 6)
	assert.ErrorIs(t, err, permits.ErrCostExceedsCapacity)
	assert.Equal(t, permits.Quota{Limit: 5, Window: 5 * unit}, q)
}

// A grant that waited for its reservation reports the key as of the
// instant it was due, Redis's instant of the slot: on the bubble's
// clock, after a burst of 2 at t0 and a wait of one unit, one unit's
// room is back and taken, so nothing remains and the key is full again
// two units later.
func TestKeyedQuotaOfAWaitedGrantIsAsOfItsSlot(t *testing.T) {
	inBubble(t, func(t *testing.T, c *redis.Client) {
		k := vkeyed(t, c, "w:", algorithms.PerSecond(1), 2)
		_, q, err := k.TryAcquireQuota("k", 2)
		require.NoError(t, err)
		assert.Equal(t, permits.Quota{Limit: 2, Remaining: 0, Reset: 2 * time.Second, Window: 2 * time.Second}, q)
		t0 := time.Now()
		_, q, err = k.AcquireQuota(context.Background(), "k", 1)
		require.NoError(t, err)
		assert.Equal(t, t0.Add(time.Second), time.Now(), "granted at its slot")
		assert.Equal(t, permits.Quota{Limit: 2, Remaining: 0, Reset: 2 * time.Second, Window: 2 * time.Second}, q)
	})
}
