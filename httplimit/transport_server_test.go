package httplimit_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/retry"
)

// The Transport against a real server on loopback, which answers from a
// script: what goes over the wire, what is closed, and how many
// connections it takes. No timing is asserted here (the waits asked for
// are zero, or capped to a few milliseconds); synctest covers the timing.

// scriptedServer answers the n-th request with script[n] (the last one
// again beyond it) and records the bodies it was sent and the connections
// it accepted.
type scriptedServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
	conns  atomic.Int64
}

type answer struct {
	status int
	header []string
	body   string
}

func newScriptedServer(t *testing.T, script ...answer) *scriptedServer {
	t.Helper()
	s := &scriptedServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.bodies)
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		a := script[min(n, len(script)-1)]
		for i := 0; i+1 < len(a.header); i += 2 {
			w.Header().Add(a.header[i], a.header[i+1])
		}
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *scriptedServer) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// closeCounter is a base RoundTripper over a real *http.Transport that
// counts the Close calls of every response body it returns.
type closeCounter struct {
	rt     *http.Transport
	mu     sync.Mutex
	bodies []*countedBody
}

type countedBody struct {
	io.ReadCloser
	closed atomic.Int64
}

func (b *countedBody) Close() error { b.closed.Add(1); return b.ReadCloser.Close() }

func (c *closeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	b := &countedBody{ReadCloser: resp.Body}
	resp.Body = b
	c.mu.Lock()
	c.bodies = append(c.bodies, b)
	c.mu.Unlock()
	return resp, nil
}

// closes returns each body's Close count.
func (c *closeCounter) closes() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n []int64
	for _, b := range c.bodies {
		n = append(n, b.closed.Load())
	}
	return n
}

func newCloseCounter(t *testing.T) *closeCounter {
	c := &closeCounter{rt: &http.Transport{}}
	t.Cleanup(c.rt.CloseIdleConnections)
	return c
}

// Scripted 429s and 503s, with Retry-After in each form and malformed
// fields among them: the POST is sent again with the same body each time,
// every refusal's body is drained and closed, and all of it goes over one
// connection.
func TestARealServerScriptedRefusals(t *testing.T) {
	srv := newScriptedServer(t,
		answer{429, []string{"Retry-After", "0"}, "quota exceeded"},
		answer{503, []string{"Retry-After", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)}, "overloaded"},
		answer{429, []string{"Retry-After", "soon", "RateLimit", `"default";r=0;t=0`, "RateLimit-Policy", `"default";q=10;w=1`}, "again"},
		answer{429, []string{"X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "0s"}, "and again"},
		answer{200, []string{"X-Usage-Tokens", "42"}, "done"},
	)
	lim := fast(t)
	base := newCloseCounter(t)
	var settled atomic.Int64
	tr := newTransport(t, lim, base, httplimit.WithRetry(retry.WithMaxAttempts(5), retry.WithBackoff(0, 0)),
		httplimit.WithSettle(func(resp *http.Response) (int64, bool) {
			n, err := parseInt(resp.Header.Get("X-Usage-Tokens"))
			settled.Add(n)
			return n, err == nil
		}))
	client := &http.Client{Transport: tr}
	resp, err := client.Post(srv.URL, "application/json", bytes.NewReader([]byte(`{"prompt":"hello"}`)))
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, "done", string(b))
	assert.Equal(t, []string{`{"prompt":"hello"}`, `{"prompt":"hello"}`, `{"prompt":"hello"}`, `{"prompt":"hello"}`, `{"prompt":"hello"}`}, srv.received())
	assert.Equal(t, []int64{1, 1, 1, 1, 1}, base.closes(), "every body closed once")
	assert.Equal(t, int64(1), srv.conns.Load(), "drained refusals leave the connection reusable")
	assert.Equal(t, int64(42), settled.Load())
	st := tr.Stats()
	st.Paced = 0 // in real time, whether an Acquire took more than 1µs is the machine's
	assert.Equal(t, httplimit.TransportStats{Requests: 1, Attempts: 5, Retries: 4, Throttled: 3, Unavailable: 1, Settled: 1,
		Responses: [6]int64{2: 1, 4: 3, 5: 1}}, st)
}

// Hostile fields from a real server: each request ends promptly with a
// clear answer, and no body is left open.
func TestARealServerHostileFields(t *testing.T) {
	many := []string{}
	for i := range 1000 {
		many = append(many, "X-Ratelimit-Remaining-Q"+strings.Repeat("x", i%50), "0")
	}
	for _, c := range []struct {
		name    string
		header  []string
		body    string
		retried bool
	}{
		{"a Retry-After of 30 years", []string{"Retry-After", "999999999"}, "", false},
		{"a reset in 2100", []string{"X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", "4102444800"}, "", false},
		{"an overflowing RateLimit", []string{"RateLimit", `"a";r=0;t=99999999999999999999`}, "", true},
		{"a negative Retry-After", []string{"Retry-After", "-1"}, "", true},
		{"a Retry-After of 100 KB", []string{"Retry-After", strings.Repeat("9", 100_000)}, "", false},
		{"a thousand exhausted quotas without resets", many, "", true},
		{"a control character", []string{"RateLimit", "\"a\";r=0;t=1\x7f"}, "", true},
		{"a body of 4 MB", []string{"Retry-After", "0"}, strings.Repeat("z", 4<<20), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newScriptedServer(t, answer{429, c.header, c.body}, answer{200, nil, "ok"})
			lim := fast(t)
			base := newCloseCounter(t)
			tr := newTransport(t, lim, base, httplimit.WithMaxPause(10*time.Millisecond), httplimit.WithRetry(retry.WithBackoff(0, 0)))
			resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			if c.retried {
				assert.Equal(t, "ok", string(b))
				assert.Len(t, srv.received(), 2)
			} else {
				assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "asked for more than the cap: handed back")
				assert.Len(t, srv.received(), 1)
			}
			for i, n := range base.closes() {
				assert.Equal(t, int64(1), n, "body %d", i)
			}
			if len(c.body) > 64<<10 {
				assert.Equal(t, int64(2), srv.conns.Load(), "a body too large to drain costs its connection, not a wait")
			}
		})
	}
}
