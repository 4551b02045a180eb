package httplimit_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// hangFirst never answers its first request: only its context ends it.
func hangFirst(n int, r *http.Request) (*http.Response, error) {
	if n == 0 {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return reply(200, "ok"), nil
}

func TestAnAttemptPastItsTimeoutIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		api := &fakeAPI{answer: hangFirst}
		tr := newTransport(t, fast(t), api, httplimit.WithAttemptTimeout(2*time.Second), httplimit.WithRetry(retry.WithBackoff(0, 0)))
		resp, err := do(t, tr, http.MethodGet, "http://api.test/", nil)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		readAll(t, resp)
		assert.Equal(t, []time.Duration{0, 2 * time.Second}, api.times(t0), "the second attempt when the first timed out")
	})
}

func TestAnAttemptTimeoutIsAnErrorOfItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{answer: hangFirst}
		tr := newTransport(t, fast(t), api, httplimit.WithAttemptTimeout(time.Second), httplimit.WithRetry(retry.WithMaxAttempts(1)))
		_, err := do(t, tr, http.MethodGet, "http://api.test/", nil)
		assert.ErrorIs(t, err, httplimit.ErrAttemptTimeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		_, err = httplimit.NewTransport(fast(t), httplimit.WithAttemptTimeout(-time.Second))
		assert.ErrorIs(t, err, permits.ErrInvalidConfig)
		_, err = httplimit.NewTransport(fast(t), httplimit.WithRetryStatuses(200))
		assert.ErrorIs(t, err, permits.ErrInvalidConfig)
	})
}

func TestComposedKeysCannotBeForgedFromTheirParts(t *testing.T) {
	k := httplimit.KeyByAll(httplimit.KeyByHeader("X-A"), httplimit.KeyByHeader("X-B"))
	one, err := keyOf(t, k, "", map[string][]string{"X-A": {"x;11:header:X-B:"}, "X-B": {"y"}})
	require.NoError(t, err)
	two, err := keyOf(t, k, "", map[string][]string{"X-A": {"x"}, "X-B": {"y"}})
	require.NoError(t, err)
	assert.NotEqual(t, one, two)
	_, err = keyOf(t, k, "", map[string][]string{"X-A": {"x"}})
	assert.ErrorIs(t, err, httplimit.ErrNoKey, "every part is needed")
}
