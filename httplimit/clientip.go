package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/sluicehq/sluice/internal/clientip"
	"github.com/sluicehq/sluice/internal/configerr"
)

// IPOption configures KeyByIP.
type IPOption interface{ applyIP(*ipConfig) }

type ipConfig struct {
	trusted    []netip.Prefix
	trustUnix  bool
	header     proxyHeader
	headerName string // as given, for the error
	v6bits     int
	err        error
	cache      *keyCache // the keys of the latest peers
}

// proxyHeader is the header the trusted proxies write the client in.
type proxyHeader struct{ clientip.Header }

// canonical is the header's name as net/http keys it.
func (h proxyHeader) canonical() string {
	switch h.Header {
	case clientip.Forwarded:
		return "Forwarded"
	case clientip.XRealIP:
		return "X-Real-Ip"
	}
	return "X-Forwarded-For"
}

type ipOptionFunc func(*ipConfig)

func (f ipOptionFunc) applyIP(c *ipConfig) { f(c) }

// TrustProxies names the proxies in front of the server, as CIDRs
// ("10.0.0.0/8", "2001:db8::/32") or single addresses. When the request
// comes from one of them, the client is read from the header they write
// (ProxyHeader; X-Forwarded-For by default): the right-most address that
// is not one of them, since every entry to its right was appended by a
// trusted proxy and everything to its left was written by the client and
// proves nothing. Without TrustProxies (or TrustUnixSocket) no header is
// ever read. An IPv4-mapped CIDR ("::ffff:10.0.0.0/104") is its IPv4 form
// (10.0.0.0/8), since addresses are compared unmapped; one shorter than
// /96, which would mix mapped and other IPv6 addresses, is an error.
func TrustProxies(cidrs ...string) IPOption {
	return ipOptionFunc(func(c *ipConfig) {
		for _, s := range cidrs {
			p, err := clientip.ParseTrusted("httplimit", strings.TrimSpace(s))
			if err != nil {
				c.err = errors.Join(c.err, err)
				continue
			}
			c.trusted = append(c.trusted, p)
		}
	})
}

// TrustUnixSocket trusts the peer of a request that came over a Unix
// socket (a proxy on the same machine, nginx or Envoy in a sidecar): the
// client is read from ProxyHeader's header as behind TrustProxies. Without
// it, every peer on a Unix socket is one client, keyed "unix:", since a
// socket's peer has no address of its own.
func TrustUnixSocket() IPOption { return ipOptionFunc(func(c *ipConfig) { c.trustUnix = true }) }

// ProxyHeader names the header the trusted proxies write the client in:
// "X-Forwarded-For" (the default), "Forwarded" (RFC 7239: for= of each
// element) or "X-Real-IP" (one address, set by the nearest proxy). Name
// the one your proxies write and only that one: a header they do not
// write comes from the client untouched, and reading it would let the
// client choose its key. Any other name is an error.
func ProxyHeader(name string) IPOption {
	return ipOptionFunc(func(c *ipConfig) {
		c.headerName = name
		h, ok := clientip.ParseHeader(name)
		if !ok {
			c.err = errors.Join(c.err, configerr.Errorf("httplimit", "proxy header %q is none of X-Forwarded-For, Forwarded, X-Real-IP", name))
			return
		}
		c.header = proxyHeader{h}
	})
}

// IPv6Prefix sets how many leading bits of an IPv6 address make one key:
// 64 by default, since one client usually has a whole /64 and could
// otherwise rotate through its addresses; 128 keys each address alone.
// bits must be between 1 and 128.
func IPv6Prefix(bits int) IPOption {
	return ipOptionFunc(func(c *ipConfig) {
		if bits < 1 || bits > 128 {
			c.err = errors.Join(c.err, configerr.Errorf("httplimit", "IPv6 prefix must be 1 to 128 bits, got %d", bits))
			return
		}
		c.v6bits = bits
	})
}

// KeyByIP returns a KeyFunc keying requests by the client's IP address:
// the peer's address (Request.RemoteAddr), or behind TrustProxies the
// client its header names (see TrustProxies and ProxyHeader). IPv4
// addresses, and IPv4-mapped IPv6 ones, are keyed alone; IPv6 addresses by
// their /64 (see IPv6Prefix). A peer on a Unix socket is keyed "unix:"
// (see TrustUnixSocket). It fails, matching ErrInvalidConfig, for an
// option it cannot use; nil options are ignored. The KeyFunc fails,
// matching ErrNoKey, when an address it must read does not parse.
func KeyByIP(opts ...IPOption) (KeyFunc, error) {
	cfg := ipConfig{v6bits: 64, cache: newKeyCache()}
	for _, o := range opts {
		if o != nil {
			o.applyIP(&cfg)
		}
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	return cfg.key, nil
}

// prefixUnix keys the peers of a Unix socket that is not trusted.
const prefixUnix = "unix:"

// key is the KeyFunc of KeyByIP.
func (c *ipConfig) key(r *http.Request) (string, error) {
	var peer netip.Addr
	if onUnixSocket(r.Context()) {
		if !c.trustUnix {
			return prefixUnix, nil
		}
	} else {
		host := peerHost(r.RemoteAddr)
		if k, ok := c.cache.get(host); ok {
			return k, nil // a peer seen lately, not a trusted proxy
		}
		var err error
		if peer, err = clientip.ParseHostPort(r.RemoteAddr); err != nil {
			return "", fmt.Errorf("%w: remote address %q: %v", ErrNoKey, r.RemoteAddr, err)
		}
		if !clientip.IsTrusted(peer, c.trusted) {
			k := clientip.Key(prefixIP, peer, c.v6bits)
			c.cache.put(host, k)
			return k, nil
		}
	}
	h, err := c.forwarded(r.Header)
	if err != nil {
		return "", err
	}
	switch {
	case h.Node != "":
		return prefixNode + h.Node, nil
	case h.Addr.IsValid():
		return clientip.Key(prefixIP, h.Addr, c.v6bits), nil
	case peer.IsValid():
		return clientip.Key(prefixIP, peer, c.v6bits), nil // the proxy named no one: the proxy itself
	}
	return prefixUnix, nil // a trusted socket whose proxy named no one
}

// prefixNode keys a client a trusted proxy named by an obfuscated
// identifier (RFC 7239 6.3, "_hidden"), which stands for the client as
// its address would.
const prefixNode = "node:"

// forwarded reads the client from the configured header of a request that
// a trusted proxy sent.
func (c *ipConfig) forwarded(h http.Header) (clientip.Hop, error) {
	hop, err := c.header.Client(h[c.header.canonical()], c.trusted)
	if err != nil {
		return clientip.Hop{}, fmt.Errorf("%w: %w", ErrNoKey, err)
	}
	return hop, nil
}

// onUnixSocket reports whether the request came in over a Unix socket,
// as the server that accepted it tells (its local address).
func onUnixSocket(ctx context.Context) bool {
	a, ok := ctx.Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || a == nil {
		return false
	}
	switch a.Network() {
	case "unix", "unixpacket", "unixgram":
		return true
	}
	return false
}
