package httplimit_test

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/permits"
)

// narrowHost serves c requests at once, each for 10 ms, and refuses any
// beyond with a 503, as a server without a queue does.
func narrowHost(c int64) http.Handler {
	var inFlight atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer inFlight.Add(-1)
		if inFlight.Add(1) > c {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		time.Sleep(10 * time.Millisecond)
		_, _ = io.WriteString(w, "ok")
	})
}

func TestAdaptiveConcurrencyFindsEachHostsCapacity(t *testing.T) {
	const c = 10
	synctest.Test(t, func(t *testing.T) {
		api := testutil.PipeServer(t, narrowHost(c))
		tr, err := httplimit.NewTransport(permits.Unlimited, httplimit.WithBase(api),
			httplimit.WithRetry(), // one attempt: a 503 goes back to the caller
			httplimit.WithAdaptiveConcurrency(func() actor.Controller { return &actor.AIMD{} }, actor.WithLimits(1, 20, 100)))
		require.NoError(t, err)
		defer tr.Close()
		end := time.Now().Add(2 * time.Second)
		var wg sync.WaitGroup
		for range 4 * c {
			wg.Go(func() {
				for time.Now().Before(end) {
					req, _ := http.NewRequest(http.MethodGet, "http://narrow.test/", nil)
					resp, err := tr.RoundTrip(req)
					if !assert.NoError(t, err) {
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
			})
		}
		wg.Wait()
		st, ok := tr.HostConcurrency("narrow.test")
		require.True(t, ok)
		t.Logf("limit %d, samples %d, signals %d", st.Size, st.Samples, st.Signals)
		assert.Positive(t, st.Signals, "the 503s reached the controller")
		assert.GreaterOrEqual(t, st.Size, int64(c)*8/10)
		assert.LessOrEqual(t, st.Size, int64(c)*12/10+1, "AIMD saws just above where the 503s start")
		_, ok = tr.HostConcurrency("other.test")
		assert.False(t, ok, "a host never sent to has no pool")
	})
}

func TestAdaptiveConcurrencyClosedTransportRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := testutil.PipeServer(t, narrowHost(1))
		tr, err := httplimit.NewTransport(permits.Unlimited, httplimit.WithBase(api),
			httplimit.WithAdaptiveConcurrency(func() actor.Controller { return &actor.Vegas{} }))
		require.NoError(t, err)
		req, _ := http.NewRequest(http.MethodGet, "http://one.test/", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.NoError(t, tr.Close())
		req, _ = http.NewRequest(http.MethodGet, "http://one.test/", nil)
		_, err = tr.RoundTrip(req)
		assert.ErrorIs(t, err, permits.ErrClosed)
	})
}

func TestAdaptiveConcurrencyBadConfigFails(t *testing.T) {
	for name, opt := range map[string]httplimit.TransportOption{
		"nil controller": httplimit.WithAdaptiveConcurrency(nil),
		"bad limits":     httplimit.WithAdaptiveConcurrency(func() actor.Controller { return &actor.AIMD{} }, actor.WithLimits(5, 1, 10)),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := httplimit.NewTransport(permits.Unlimited, opt)
			assert.True(t, errors.Is(err, permits.ErrInvalidConfig), "%v", err)
		})
	}
}
