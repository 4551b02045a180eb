package clientip_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/clientip"
	"github.com/sluicehq/sluice/permits"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var trusted = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}

func TestTheClientIsTheRightmostUntrustedEntryOfEveryHeader(t *testing.T) {
	for _, c := range []struct {
		name   string
		lines  []string
		client string
	}{
		{"x-forwarded-for", []string{"6.6.6.6, 192.0.2.1", "10.1.1.1"}, "192.0.2.1"},
		{"forwarded", []string{"for=6.6.6.6, for=192.0.2.1;proto=h2", "for=10.1.1.1"}, "192.0.2.1"},
		{"X-Real-IP", []string{"6.6.6.6", " 192.0.2.1:443 "}, "192.0.2.1"},
	} {
		h, ok := clientip.ParseHeader(c.name)
		require.True(t, ok, c.name)
		hop, err := h.Client(c.lines, trusted)
		require.NoError(t, err, c.name)
		assert.Equal(t, netip.MustParseAddr(c.client), hop.Addr, c.name)
	}
}

func TestAnEntryLeftOfTheClientIsNeverParsed(t *testing.T) {
	hop, err := clientip.XForwardedFor.Client([]string{"<garbage>, 192.0.2.1, 10.0.0.2"}, trusted)
	require.NoError(t, err)
	assert.Equal(t, netip.MustParseAddr("192.0.2.1"), hop.Addr)
	_, err = clientip.XForwardedFor.Client([]string{"192.0.2.1, <garbage>"}, trusted)
	assert.Error(t, err, "an entry a trusted proxy appended that is no address")
}

func TestOnlyTheThreeHeadersAreKnown(t *testing.T) {
	_, ok := clientip.ParseHeader("x-client-ip")
	assert.False(t, ok)
}

func TestATrustedProxyThatIsNoCIDRIsAConfigurationError(t *testing.T) {
	_, err := clientip.ParseTrusted("grpclimit", "proxy.internal")
	assert.ErrorIs(t, err, permits.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "grpclimit:")
}

func TestIPv6ClientsAreKeyedByTheirPrefix(t *testing.T) {
	assert.Equal(t, "peer:2001:db8::/64", clientip.Key("peer:", netip.MustParseAddr("2001:db8::17"), 64))
	assert.Equal(t, "peer:192.0.2.1", clientip.Key("peer:", netip.MustParseAddr("192.0.2.1"), 64))
}
