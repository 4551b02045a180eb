package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/sluicehq/sluice/internal/clientip"
	"github.com/sluicehq/sluice/internal/configerr"
)

// PeerOption configures KeyByPeer.
type PeerOption interface{ applyPeer(*peerConfig) }

type peerConfig struct {
	trusted   []netip.Prefix
	trustUnix bool
	header    clientip.Header
	mdKey     string // the header's metadata key, lower case
	v6bits    int
	err       error
}

type peerOptionFunc func(*peerConfig)

func (f peerOptionFunc) applyPeer(c *peerConfig) { f(c) }

// TrustProxies names the proxies in front of the server (an Envoy, a load
// balancer that speaks HTTP/2), as CIDRs ("10.0.0.0/8") or single
// addresses. When a call comes from one of them, the client is read from
// the metadata they write (ProxyHeader; x-forwarded-for by default): the
// right-most address that is not one of them, since every entry to its
// right was appended by a trusted proxy and everything to its left was
// written by the client and proves nothing. Without TrustProxies (or
// TrustUnixSocket) no metadata is ever read. This is httplimit's
// TrustProxies, read by the same code.
func TrustProxies(cidrs ...string) PeerOption {
	return peerOptionFunc(func(c *peerConfig) {
		for _, s := range cidrs {
			p, err := clientip.ParseTrusted("grpclimit", strings.TrimSpace(s))
			if err != nil {
				c.err = errors.Join(c.err, err)
				continue
			}
			c.trusted = append(c.trusted, p)
		}
	})
}

// TrustUnixSocket trusts a peer on a Unix socket (a sidecar proxy): the
// client is read from ProxyHeader's metadata as behind TrustProxies.
// Without it, every peer on a Unix socket is one client, keyed "unix:".
func TrustUnixSocket() PeerOption {
	return peerOptionFunc(func(c *peerConfig) { c.trustUnix = true })
}

// ProxyHeader names the metadata the trusted proxies write the client in:
// "x-forwarded-for" (the default), "forwarded" (RFC 7239: for= of each
// element) or "x-real-ip" (one address, set by the nearest proxy), in any
// case. Name the one your proxies write and only that one: metadata they
// do not write comes from the client untouched. Any other name is an
// error.
func ProxyHeader(name string) PeerOption {
	return peerOptionFunc(func(c *peerConfig) {
		h, ok := clientip.ParseHeader(name)
		if !ok {
			c.err = errors.Join(c.err, configerr.Errorf("grpclimit", "proxy header %q is none of x-forwarded-for, forwarded, x-real-ip", name))
			return
		}
		c.header, c.mdKey = h, strings.ToLower(strings.TrimSpace(name))
	})
}

// IPv6Prefix sets how many leading bits of an IPv6 address make one key:
// 64 by default, since one client usually has a whole /64; 128 keys each
// address alone. bits must be between 1 and 128.
func IPv6Prefix(bits int) PeerOption {
	return peerOptionFunc(func(c *peerConfig) {
		if bits < 1 || bits > 128 {
			c.err = errors.Join(c.err, configerr.Errorf("grpclimit", "IPv6 prefix must be 1 to 128 bits, got %d", bits))
			return
		}
		c.v6bits = bits
	})
}

// KeyByPeer returns a KeyFunc keying calls by the client's IP address: the
// peer's (peer.FromContext), or behind TrustProxies the client its
// metadata names. IPv4 addresses are keyed alone ("ip:192.0.2.1"), IPv6
// ones by their /64 (IPv6Prefix); a peer on a Unix socket is "unix:", and
// any other peer without an address (an in-process bufconn) is keyed by
// its network ("bufconn:"). It fails, matching permits.ErrInvalidConfig,
// for an option it cannot use; nil options are ignored. The KeyFunc fails,
// matching ErrNoKey, for a call without a peer or an address it must read
// that does not parse.
func KeyByPeer(opts ...PeerOption) (KeyFunc, error) {
	cfg := peerConfig{v6bits: 64, mdKey: "x-forwarded-for"}
	for _, o := range opts {
		if o != nil {
			o.applyPeer(&cfg)
		}
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	return cfg.key, nil
}

// key is the KeyFunc of KeyByPeer.
func (c *peerConfig) key(ctx context.Context, _ string) (string, error) {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return "", fmt.Errorf("%w: the call has no peer", ErrNoKey)
	}
	addr, unix, err := peerAddr(p.Addr)
	switch {
	case err != nil:
		return "", err
	case !addr.IsValid() && !unix:
		return p.Addr.Network() + ":", nil // an in-process peer: one client
	case unix && !c.trustUnix:
		return "unix:", nil
	case addr.IsValid() && !clientip.IsTrusted(addr, c.trusted):
		return clientip.Key(prefixIP, addr, c.v6bits), nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	hop, err := c.header.Client(md[c.mdKey], c.trusted)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: %w", ErrNoKey, err)
	case hop.Node != "":
		return "node:" + hop.Node, nil
	case hop.Addr.IsValid():
		return clientip.Key(prefixIP, hop.Addr, c.v6bits), nil
	case addr.IsValid():
		return clientip.Key(prefixIP, addr, c.v6bits), nil // the proxy named no one: the proxy itself
	}
	return "unix:", nil // a trusted socket whose proxy named no one
}

// peerAddr is the IP address of a, or whether a is a Unix socket; neither
// for a peer of another kind.
func peerAddr(a net.Addr) (netip.Addr, bool, error) {
	switch v := a.(type) {
	case *net.TCPAddr:
		ip, ok := netip.AddrFromSlice(v.IP)
		if !ok {
			return netip.Addr{}, false, fmt.Errorf("%w: peer address %q", ErrNoKey, clip(a.String()))
		}
		return ip.Unmap(), false, nil
	case *net.UnixAddr:
		return netip.Addr{}, true, nil
	}
	switch a.Network() {
	case "tcp", "tcp4", "tcp6", "udp":
		ip, err := clientip.ParseHostPort(a.String())
		if err != nil {
			return netip.Addr{}, false, fmt.Errorf("%w: peer address %q: %v", ErrNoKey, clip(a.String()), err)
		}
		return ip, false, nil
	case "unix", "unixpacket":
		return netip.Addr{}, true, nil
	}
	return netip.Addr{}, false, nil
}
