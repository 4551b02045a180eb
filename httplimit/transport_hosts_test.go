package httplimit_test

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/retry"
)

// hostLog is a real server's record of when each host was sent to.
type hostLog struct {
	mu   sync.Mutex
	t0   time.Time
	sent map[string][]time.Duration
}

func (l *hostLog) at(host string) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.sent[host])
}

// busyHost answers the first refusals requests to host "busy.test" 429
// with Retry-After: 1, and everything else 200.
func busyHost(log *hostLog, refusals int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.mu.Lock()
		n := len(log.sent[r.Host])
		log.sent[r.Host] = append(log.sent[r.Host], time.Since(log.t0))
		log.mu.Unlock()
		if r.Host == "busy.test" && n < refusals {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
}

func getVia(t *testing.T, tr http.RoundTripper, url string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestA429PausesOnlyItsHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &hostLog{t0: time.Now(), sent: map[string][]time.Duration{}}
		base := testutil.PipeServer(t, busyHost(log, 1))
		tr := newTransportOn(t, base)
		var wg sync.WaitGroup
		wg.Go(func() { assert.Equal(t, 200, getVia(t, tr, "http://busy.test/")) })
		synctest.Wait() // the 429 is in, the retry waits
		assert.Equal(t, 200, getVia(t, tr, "http://calm.test/"))
		assert.Equal(t, []time.Duration{0}, log.at("calm.test"), "another host is not paused")
		wg.Wait()
		busy := log.at("busy.test")
		require.Len(t, busy, 2)
		assert.GreaterOrEqual(t, busy[1], time.Second, "the retry waits out Retry-After")
	})
}

// allIn holds the first n requests until all n have reached the server,
// so that they are all sent before any refusal pauses their host: one
// sent after the first 429 came back would wait out the pause before its
// first try, which is right, but is not what this test is about.
func allIn(n int, h http.Handler) http.Handler {
	var mu sync.Mutex
	in, all := 0, make(chan struct{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first := in < n
		if in++; in == n {
			close(all)
		}
		mu.Unlock()
		if first {
			<-all
		}
		h.ServeHTTP(w, r)
	})
}

func TestRetriesAfterASharedRetryAfterAreSpreadAboveIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &hostLog{t0: time.Now(), sent: map[string][]time.Duration{}}
		tr := newTransportOn(t, testutil.PipeServer(t, allIn(10, busyHost(log, 10))))
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() { assert.Equal(t, 200, getVia(t, tr, "http://busy.test/")) })
		}
		wg.Wait()
		sent := log.at("busy.test")
		require.Len(t, sent, 20)
		retries := sent[10:]
		for _, at := range retries {
			assert.GreaterOrEqual(t, at, time.Second, "never before Retry-After")
			assert.LessOrEqual(t, at, time.Second+250*time.Millisecond, "within a quarter of it above")
		}
		slices.Sort(retries)
		assert.Greater(t, len(slices.Compact(retries)), 1, "not all at one instant: %v", retries)
	})
}

func TestAnErrorAfterRetriesIsARetryError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("connection reset")
		api := &fakeAPI{answer: func(n int, r *http.Request) (*http.Response, error) {
			if n == 0 {
				return reply(503, "", "Retry-After", "1"), nil
			}
			return nil, boom // a POST is not retried after a network error
		}}
		tr := newTransport(t, fast(t), api)
		req, err := http.NewRequest(http.MethodPost, "http://api.test/", strings.NewReader("body"))
		require.NoError(t, err)
		_, err = tr.RoundTrip(req)
		var re *retry.Error
		require.ErrorAs(t, err, &re, "a retry was made: %v", err)
		assert.Equal(t, 2, re.Attempts)
		assert.ErrorIs(t, err, httplimit.ErrNotRetried)
		assert.ErrorIs(t, err, boom)
	})
}

// newTransportOn is a Transport over base, per-host pauses and jitter as
// by default.
func newTransportOn(t *testing.T, base http.RoundTripper, opts ...httplimit.TransportOption) *httplimit.Transport {
	t.Helper()
	tr, err := httplimit.NewTransport(newLimiter(t, algorithms.PerSecond(1000), 100),
		append([]httplimit.TransportOption{httplimit.WithBase(base)}, opts...)...)
	require.NoError(t, err)
	return tr
}
