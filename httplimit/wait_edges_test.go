package httplimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
)

// strconv.ParseUint reports ErrRange as soon as the digits overflow, before
// it looks at the rest: garbage after 20 digits must not read as a wait.
func TestRetryAfterGarbageAfterManyDigitsIsNoWait(t *testing.T) {
	now := time.Now()
	for _, v := range []string{
		"99999999999999999999abc",
		"99999999999999999999 GMT",
		"184467440737095516160x",
	} {
		if d, ok := httplimit.ParseRetryAfter(v, now); ok {
			t.Errorf("ParseRetryAfter(%q) = %v, true; want not a Retry-After", v, d)
		}
	}
}

// A request whose client is gone before the middleware asks fails the
// Acquire (a done context), costs nothing and gets no answer, however the
// wait is bounded.
func TestWaitDoesNotChargeAGoneClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := gcraLimiter(t, algorithms.PerSecond(1), 1)
		served := 0
		h := httplimit.Middleware(l, httplimit.KeyByHeader("X-User"), httplimit.WithWait(250*time.Millisecond))(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ }))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
		req.Header.Set("X-User", "u")
		h.ServeHTTP(httptest.NewRecorder(), req)
		assert.Equal(t, 0, served, "the handler ran for a client that had gone")
		rec := httptest.NewRecorder()
		req = httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-User", "u")
		h.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusOK, rec.Code, "the live client found its key charged by the gone one")
	})
}
