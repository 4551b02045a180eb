package grpclimit_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/sluicehq/sluice/grpclimit"
	"github.com/sluicehq/sluice/permits"
)

// from is a call's context from the peer addr, with incoming metadata
// kv (key, value, key, value, ...).
func from(addr net.Addr, kv ...string) context.Context {
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: addr})
	return metadata.NewIncomingContext(ctx, metadata.Pairs(kv...))
}

func tcp(s string) net.Addr {
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		panic(err)
	}
	return a
}

func keyOf(t *testing.T, k grpclimit.KeyFunc, ctx context.Context) string {
	t.Helper()
	key, err := k(ctx, checkMethod)
	require.NoError(t, err)
	return key
}

func TestAPeerIsKeyedByItsAddressAndIPv6ByItsPrefix(t *testing.T) {
	k, err := grpclimit.KeyByPeer()
	require.NoError(t, err)
	assert.Equal(t, "ip:192.0.2.1", keyOf(t, k, from(tcp("192.0.2.1:5000"))))
	assert.Equal(t, "ip:192.0.2.1", keyOf(t, k, from(tcp("[::ffff:192.0.2.1]:5000"))), "mapped is IPv4")
	assert.Equal(t, "ip:2001:db8:1:2::/64", keyOf(t, k, from(tcp("[2001:db8:1:2::17]:5000"))))
	assert.Equal(t, "unix:", keyOf(t, k, from(&net.UnixAddr{Name: "/run/s.sock", Net: "unix"})))
}

func TestAnUntrustedPeersMetadataIsNeverRead(t *testing.T) {
	k, err := grpclimit.KeyByPeer(grpclimit.TrustProxies("10.0.0.0/8"))
	require.NoError(t, err)
	assert.Equal(t, "ip:192.0.2.1", keyOf(t, k, from(tcp("192.0.2.1:1"), "x-forwarded-for", "6.6.6.6")))
}

func TestATrustedProxysMetadataNamesTheClient(t *testing.T) {
	for _, c := range []struct {
		header string
		kv     []string
		want   string
	}{
		{"", []string{"x-forwarded-for", "6.6.6.6, 192.0.2.7, 10.1.1.1"}, "ip:192.0.2.7"},
		{"Forwarded", []string{"forwarded", `for=6.6.6.6, for="[2001:db8::9]:80"`}, "ip:2001:db8::/64"},
		{"x-real-ip", []string{"x-real-ip", "192.0.2.8"}, "ip:192.0.2.8"},
		{"", nil, "ip:10.0.0.1"}, // the proxy named no one: the proxy itself
	} {
		opts := []grpclimit.PeerOption{grpclimit.TrustProxies("10.0.0.0/8")}
		if c.header != "" {
			opts = append(opts, grpclimit.ProxyHeader(c.header))
		}
		k, err := grpclimit.KeyByPeer(opts...)
		require.NoError(t, err)
		assert.Equal(t, c.want, keyOf(t, k, from(tcp("10.0.0.1:1"), c.kv...)), c.header)
	}
}

func TestABadEntryFromATrustedProxyIsNoKey(t *testing.T) {
	k, err := grpclimit.KeyByPeer(grpclimit.TrustProxies("10.0.0.0/8"))
	require.NoError(t, err)
	_, err = k(from(tcp("10.0.0.1:1"), "x-forwarded-for", "192.0.2.1, garbage"), checkMethod)
	assert.ErrorIs(t, err, grpclimit.ErrNoKey)
	_, err = k(context.Background(), checkMethod)
	assert.ErrorIs(t, err, grpclimit.ErrNoKey, "no peer")
}

func TestKeyByPeerRefusesWhatItCannotUse(t *testing.T) {
	for _, opt := range []grpclimit.PeerOption{
		grpclimit.TrustProxies("proxy.internal"), grpclimit.ProxyHeader("x-client-ip"),
		grpclimit.IPv6Prefix(0), grpclimit.IPv6Prefix(129),
	} {
		_, err := grpclimit.KeyByPeer(opt)
		assert.ErrorIs(t, err, permits.ErrInvalidConfig)
	}
}

func TestKeyByMetadataTakesTheLastValue(t *testing.T) {
	k := grpclimit.KeyByMetadata("X-Tenant")
	assert.Equal(t, "md:x-tenant:acme", keyOf(t, k, from(tcp("192.0.2.1:1"), "x-tenant", "other", "x-tenant", " acme ")))
	_, err := k(from(tcp("192.0.2.1:1")), checkMethod)
	assert.ErrorIs(t, err, grpclimit.ErrNoKey)
}

func TestKeyByAllKeepsItsPartsApart(t *testing.T) {
	k := grpclimit.KeyByAll(grpclimit.KeyByMetadata("t"), grpclimit.KeyByMethod())
	a := keyOf(t, k, from(nil, "t", "a;method:/x"))
	b := keyOf(t, k, from(nil, "t", "a"))
	assert.NotEqual(t, a, b)
	assert.Equal(t, "6:md:t:a;35:method:"+checkMethod+";", b)
}

func TestFirstKeyFallsBackToTheNext(t *testing.T) {
	byPeer, err := grpclimit.KeyByPeer()
	require.NoError(t, err)
	k := grpclimit.FirstKey(grpclimit.KeyByMetadata("x-tenant"), byPeer)
	assert.Equal(t, "ip:192.0.2.1", keyOf(t, k, from(tcp("192.0.2.1:1"))))
	assert.Equal(t, "md:x-tenant:a", keyOf(t, k, from(tcp("192.0.2.1:1"), "x-tenant", "a")))
}
