package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/httplimit"
)

func keyOf(t *testing.T, k httplimit.KeyFunc, remote string, header map[string][]string) (string, error) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = remote
	for name, vs := range header {
		for _, v := range vs {
			r.Header.Add(name, v)
		}
	}
	return k(r)
}

func TestKeyByIP(t *testing.T) {
	k := byIP(t)
	for _, c := range []struct{ remote, want string }{
		{"203.0.113.7:1234", "ip:203.0.113.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "ip:2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "ip:2001:db8:1:2::/64"},
		{"[::ffff:203.0.113.7]:80", "ip:203.0.113.7"},
		{"[fe80::1%eth0]:80", "ip:fe80::/64"},
		{"198.51.100.2", "ip:198.51.100.2"},
	} {
		got, err := keyOf(t, k, c.remote, nil)
		require.NoError(t, err, c.remote)
		assert.Equal(t, c.want, got, c.remote)
	}
	_, err := keyOf(t, k, "@", nil)
	assert.ErrorIs(t, err, httplimit.ErrNoKey)

	k128 := byIP(t, httplimit.IPv6Prefix(128))
	got, err := keyOf(t, k128, "[2001:db8::1]:1", nil)
	require.NoError(t, err)
	assert.Equal(t, "ip:2001:db8::1", got)
	k48 := byIP(t, httplimit.IPv6Prefix(48))
	got, _ = keyOf(t, k48, "[2001:db8:1:2::1]:1", nil)
	assert.Equal(t, "ip:2001:db8:1::/48", got)

	for _, bad := range []httplimit.IPOption{httplimit.IPv6Prefix(0), httplimit.IPv6Prefix(129), httplimit.TrustProxies("10.0.0.0/33"), httplimit.TrustProxies("proxy")} {
		_, err := httplimit.KeyByIP(bad)
		assert.Error(t, err)
	}
	_, err = httplimit.KeyByIP(nil)
	assert.NoError(t, err)
}

func TestKeyByIPBehindTrustedProxies(t *testing.T) {
	k := byIP(t, httplimit.TrustProxies("10.0.0.0/8", "2001:db8:ffff::/48"))
	for _, c := range []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"untrusted peer: the header is ignored", "203.0.113.1:1", []string{"198.51.100.1"}, "ip:203.0.113.1"},
		{"one proxy", "10.0.0.1:1", []string{"198.51.100.1"}, "ip:198.51.100.1"},
		{"a spoofed left part", "10.0.0.1:1", []string{"6.6.6.6, 198.51.100.1, 10.2.2.2"}, "ip:198.51.100.1"},
		{"split over header lines", "10.0.0.1:1", []string{"6.6.6.6", "198.51.100.1", "10.3.3.3"}, "ip:198.51.100.1"},
		{"ports and brackets", "10.0.0.1:1", []string{"[2001:db8:5::9]:443, 10.0.0.5:80"}, "ip:2001:db8:5::/64"},
		{"every hop trusted: the farthest", "10.0.0.1:1", []string{"10.0.0.9, 10.0.0.8"}, "ip:10.0.0.9"},
		{"no header: the proxy itself", "10.0.0.1:1", nil, "ip:10.0.0.1"},
		{"an IPv6 proxy", "[2001:db8:ffff::1]:1", []string{"198.51.100.4"}, "ip:198.51.100.4"},
		{"garbage left of the client is never read", "10.0.0.1:1", []string{"<script>, 198.51.100.1"}, "ip:198.51.100.1"},
	} {
		got, err := keyOf(t, k, c.remote, map[string][]string{"X-Forwarded-For": c.xff})
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
	_, err := keyOf(t, k, "10.0.0.1:1", map[string][]string{"X-Forwarded-For": {"198.51.100.1, not-an-ip"}})
	assert.ErrorIs(t, err, httplimit.ErrNoKey)
}

func TestHeaderAndAPIKeys(t *testing.T) {
	got, err := keyOf(t, httplimit.KeyByHeader("x-user-id"), "1.2.3.4:5", map[string][]string{"X-User-Id": {" alice "}})
	require.NoError(t, err)
	assert.Equal(t, "header:X-User-Id:alice", got)

	valid := func(k string) bool { return k == "secret" }
	k := httplimit.KeyByAPIKey(valid)
	got, err = keyOf(t, k, "", map[string][]string{"Authorization": {"Bearer secret"}})
	require.NoError(t, err)
	assert.Equal(t, "apikey:secret", got)
	got, err = keyOf(t, k, "", map[string][]string{"X-Api-Key": {"secret"}})
	require.NoError(t, err)
	assert.Equal(t, "apikey:secret", got)
	_, err = keyOf(t, k, "", map[string][]string{"X-Api-Key": {"guess"}})
	assert.ErrorIs(t, err, httplimit.ErrNoKey)
	_, err = keyOf(t, httplimit.FirstKey(nil), "", nil)
	assert.ErrorIs(t, err, httplimit.ErrNoKey)
}
