package httplimit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/permits"
)

func TestEveryFormOfForwardedIsRead(t *testing.T) {
	k := byIP(t, httplimit.TrustProxies("10.0.0.0/8"), httplimit.ProxyHeader("forwarded"))
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"a token", []string{"for=192.0.2.43"}, "ip:192.0.2.43"},
		{"quoted, with a port", []string{`for="192.0.2.43:47011"`}, "ip:192.0.2.43"},
		{"IPv6 in brackets", []string{`for="[2001:db8:cafe::17]"`}, "ip:2001:db8:cafe::/64"},
		{"IPv6 with a port", []string{`For="[2001:db8:cafe::17]:4711"`}, "ip:2001:db8:cafe::/64"},
		{"other pairs around it", []string{`proto=https;for=192.0.2.43;by=10.0.0.1;host="a.example"`}, "ip:192.0.2.43"},
		{"an obfuscated port", []string{`for="192.0.2.43:_p1"`}, "ip:192.0.2.43"},
		{"right-most untrusted", []string{"for=6.6.6.6, for=192.0.2.43, for=10.1.2.3"}, "ip:192.0.2.43"},
		{"over lines", []string{"for=6.6.6.6", "for=192.0.2.43", "for=10.1.2.3"}, "ip:192.0.2.43"},
		{"a quoted comma stays in its element", []string{`for=6.6.6.6;x="a,b", for=192.0.2.43`}, "ip:192.0.2.43"},
		{"an element without for=", []string{"for=192.0.2.43, proto=https;by=10.0.0.2"}, "ip:192.0.2.43"},
		{"obfuscated: its identifier", []string{"for=6.6.6.6, for=_hidden, for=10.1.2.3"}, "node:_hidden"},
		{"unknown: the farthest known", []string{"for=6.6.6.6, for=unknown, for=10.1.2.3"}, "ip:10.1.2.3"},
		{"unknown at once: the peer", []string{"for=unknown"}, "ip:10.0.0.1"},
		{"every hop trusted: the farthest", []string{"for=10.9.9.9, for=10.1.2.3"}, "ip:10.9.9.9"},
		{"garbage left of the client is never read", []string{`<script>;;=, for=192.0.2.43`}, "ip:192.0.2.43"},
		{"no header: the proxy", nil, "ip:10.0.0.1"},
	} {
		got, err := keyOf(t, k, "10.0.0.1:1", map[string][]string{"Forwarded": c.lines})
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
	for _, bad := range []string{
		`for="192.0.2.43`, `for=192.0.2.43:80`, `for="[2001:db8::1"`, `for=[2001:db8::1]`, `for="2001:db8::1"`,
		`for="[::ffff:1.2.3.4]"x`, `for=1.2.3.4;for=5.6.7.8`, `for`, `for="\"`, `for="192.0.2.43:123456"`, `for=_`, `for=a b`,
	} {
		_, err := keyOf(t, k, "10.0.0.1:1", map[string][]string{"Forwarded": {bad}})
		assert.ErrorIs(t, err, httplimit.ErrNoKey, bad)
	}
}

func TestKeyByIPRefusesWhatItCannotUse(t *testing.T) {
	for _, opt := range []httplimit.IPOption{
		httplimit.TrustProxies("::ffff:0:0/95"),
		httplimit.TrustProxies("10.0.0.0/33"),
		httplimit.TrustProxies("proxy.internal"),
		httplimit.ProxyHeader("X-Client-IP"),
		httplimit.IPv6Prefix(0),
		httplimit.IPv6Prefix(129),
	} {
		_, err := httplimit.KeyByIP(opt)
		assert.ErrorIs(t, err, permits.ErrInvalidConfig)
	}
	for _, mapped := range []string{"::ffff:10.0.0.0/104", "::ffff:10.1.2.3", "::ffff:0:0/96"} {
		k := byIP(t, httplimit.TrustProxies(mapped))
		got, err := keyOf(t, k, "10.1.2.3:1", map[string][]string{"X-Forwarded-For": {"192.0.2.1"}})
		require.NoError(t, err)
		assert.Equal(t, "ip:192.0.2.1", got, "%s trusts 10.1.2.3", mapped)
	}
}
