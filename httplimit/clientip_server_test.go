package httplimit_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
)

// sendWith sends a GET with the header's lines through c and returns the
// status.
func sendWith(t *testing.T, c *http.Client, url string, kv ...string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Add(kv[i], kv[i+1])
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// unixServer serves h on a Unix socket and returns a client that dials it.
func unixServer(t *testing.T, h http.Handler) *http.Client {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = srv.Close()
		<-done
	})
	return &http.Client{Transport: tr}
}

func TestAUnixSocketPeerIsKeyed(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerHour(1), 1)
	c := unixServer(t, httplimit.Middleware(l, byIP(t))(ok))
	assert.Equal(t, http.StatusOK, sendWith(t, c, "http://local/"), "a socket's peer has a key, not a 400")
	assert.Equal(t, http.StatusTooManyRequests, sendWith(t, c, "http://local/", "X-Forwarded-For", "203.0.113.1"),
		"untrusted, every socket peer is one client, and its header is not read")
}

func TestATrustedUnixSocketIsReadLikeATrustedProxy(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerHour(1), 1)
	c := unixServer(t, httplimit.Middleware(l, byIP(t, httplimit.TrustUnixSocket()))(ok))
	assert.Equal(t, http.StatusOK, sendWith(t, c, "http://local/", "X-Forwarded-For", "203.0.113.1"))
	assert.Equal(t, http.StatusOK, sendWith(t, c, "http://local/", "X-Forwarded-For", "203.0.113.2"))
	assert.Equal(t, http.StatusTooManyRequests, sendWith(t, c, "http://local/", "X-Forwarded-For", "6.6.6.6, 203.0.113.1"))
}

func TestAnIPv4MappedTrustedCIDRIsItsIPv4Form(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerHour(1), 1)
	srv := httptest.NewServer(httplimit.Middleware(l, byIP(t, httplimit.TrustProxies("::ffff:127.0.0.0/104")))(ok))
	defer srv.Close()
	// The peer is 127.0.0.1, a trusted proxy: each forwarded client has its
	// own quota.
	assert.Equal(t, http.StatusOK, sendWith(t, srv.Client(), srv.URL, "X-Forwarded-For", "203.0.113.1"))
	assert.Equal(t, http.StatusOK, sendWith(t, srv.Client(), srv.URL, "X-Forwarded-For", "203.0.113.2"))
	assert.Equal(t, http.StatusTooManyRequests, sendWith(t, srv.Client(), srv.URL, "X-Forwarded-For", "203.0.113.1"))
}

func TestForwardedIsReadFromTrustedProxies(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerHour(1), 1)
	k := byIP(t, httplimit.TrustProxies("127.0.0.1", "10.0.0.0/8"), httplimit.ProxyHeader("Forwarded"))
	srv := httptest.NewServer(httplimit.Middleware(l, k)(ok))
	defer srv.Close()
	c := srv.Client()
	assert.Equal(t, http.StatusOK, sendWith(t, c, srv.URL, "Forwarded", `for="[2001:db8:cafe::17]:4711";proto=https`))
	assert.Equal(t, http.StatusOK, sendWith(t, c, srv.URL, "Forwarded", `for=192.0.2.60, for=10.1.1.1;by=10.0.0.2`))
	assert.Equal(t, http.StatusTooManyRequests, sendWith(t, c, srv.URL, "Forwarded", `for=6.6.6.6, for="192.0.2.60:80"`),
		"192.0.2.60 spent its quota; the client's 6.6.6.6 left of it proves nothing")
	assert.Equal(t, http.StatusTooManyRequests, sendWith(t, c, srv.URL, "Forwarded", `for="[2001:db8:cafe::99]"`), "the same /64")
	assert.Equal(t, http.StatusOK, sendWith(t, c, srv.URL, "X-Forwarded-For", "192.0.2.61", "Forwarded", "for=192.0.2.62"),
		"only the named header is read")
	assert.Equal(t, http.StatusBadRequest, sendWith(t, c, srv.URL, "Forwarded", `for="192.0.2.63`), "an open quote")
}

func TestXRealIPIsReadFromTrustedProxies(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerHour(1), 1)
	k := byIP(t, httplimit.TrustProxies("127.0.0.1"), httplimit.ProxyHeader("x-real-ip"))
	srv := httptest.NewServer(httplimit.Middleware(l, k)(ok))
	defer srv.Close()
	c := srv.Client()
	assert.Equal(t, http.StatusOK, sendWith(t, c, srv.URL, "X-Real-IP", "192.0.2.1"))
	assert.Equal(t, http.StatusOK, sendWith(t, c, srv.URL, "X-Real-IP", "192.0.2.1", "X-Real-IP", "192.0.2.2"), "the proxy's, the last")
	assert.Equal(t, http.StatusTooManyRequests, sendWith(t, c, srv.URL, "X-Real-IP", "192.0.2.2"))
	assert.Equal(t, http.StatusBadRequest, sendWith(t, c, srv.URL, "X-Real-IP", "not-an-address"))
}

func TestHostileForwardingHeadersAreAnsweredNotFeared(t *testing.T) {
	l := gcraLimiter(t, algorithms.PerHour(1000), 1000)
	k := byIP(t, httplimit.TrustProxies("127.0.0.1", "10.0.0.0/8"), httplimit.ProxyHeader("Forwarded"))
	srv := httptest.NewServer(httplimit.Middleware(l, k)(ok))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	for range 10_000 {
		req.Header.Add("Forwarded", "for=10.0.0.1") // every hop trusted: all are read
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "10,000 trusted hops: the farthest")
	for _, v := range []string{strings.Repeat(`for="`, 150_000), "for=\xff\xfe", strings.Repeat("for=_a;", 100_000)} {
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusRequestHeaderFieldsTooLarge},
			sendWith(t, srv.Client(), srv.URL, "Forwarded", v))
	}
}
