package httplimit

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// KeyFunc returns the key a request is limited by: the client's address,
// a user, an API key. An error means the request cannot be attributed; the
// middleware answers it with WithErrorHandler's handler (400 by default).
type KeyFunc func(r *http.Request) (string, error)

// ErrNoKey is matched by the error of a KeyFunc that found nothing to key
// the request by: no such header, an unknown API key, an address that does
// not parse.
var ErrNoKey = errors.New("httplimit: no key for the request")

// Keys are prefixed by where they come from ("ip:", "header:NAME:",
// "apikey:"), so that a client cannot make its header key collide with
// another client's address and spend that client's quota.
const (
	prefixIP     = "ip:"
	prefixHeader = "header:"
	prefixAPIKey = "apikey:"
)

// maxKeyLen bounds a key taken from a header: a client that sends
// megabytes of key must not make the limiter hold them.
const maxKeyLen = 256

// IPOption configures KeyByIP.
type IPOption interface{ applyIP(*ipConfig) }

type ipConfig struct {
	trusted []netip.Prefix
	v6bits  int
	err     error
}

type ipOptionFunc func(*ipConfig)

func (f ipOptionFunc) applyIP(c *ipConfig) { f(c) }

// TrustProxies names the proxies in front of the server, as CIDRs
// ("10.0.0.0/8", "2001:db8::/32") or single addresses. When the request
// comes from one of them, the client is the right-most address of
// X-Forwarded-For that is not one of them: every address to its right was
// appended by a trusted proxy, and everything to its left was written by
// the client and proves nothing. Without TrustProxies the header is never
// read.
func TrustProxies(cidrs ...string) IPOption {
	return ipOptionFunc(func(c *ipConfig) {
		for _, s := range cidrs {
			s = strings.TrimSpace(s)
			p, err := netip.ParsePrefix(s)
			if err != nil {
				a, aerr := netip.ParseAddr(s)
				if aerr != nil {
					c.err = errors.Join(c.err, fmt.Errorf("httplimit: trusted proxy %q is neither a CIDR nor an address", s))
					continue
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			c.trusted = append(c.trusted, p.Masked())
		}
	})
}

// IPv6Prefix sets how many leading bits of an IPv6 address make one key:
// 64 by default, since one client usually has a whole /64 and could
// otherwise rotate through its addresses; 128 keys each address alone.
// bits must be between 1 and 128.
func IPv6Prefix(bits int) IPOption {
	return ipOptionFunc(func(c *ipConfig) {
		if bits < 1 || bits > 128 {
			c.err = errors.Join(c.err, fmt.Errorf("httplimit: IPv6 prefix must be 1 to 128 bits, got %d", bits))
			return
		}
		c.v6bits = bits
	})
}

// KeyByIP returns a KeyFunc keying requests by the client's IP address:
// the peer's address (Request.RemoteAddr), or behind TrustProxies the
// right-most untrusted address of X-Forwarded-For. IPv4 addresses, and
// IPv4-mapped IPv6 ones, are keyed alone; IPv6 addresses by their /64 (see
// IPv6Prefix). It fails for an option it cannot use; nil options are
// ignored. The KeyFunc fails, matching ErrNoKey, when an address does not
// parse.
func KeyByIP(opts ...IPOption) (KeyFunc, error) {
	cfg := ipConfig{v6bits: 64}
	for _, o := range opts {
		if o != nil {
			o.applyIP(&cfg)
		}
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	return func(r *http.Request) (string, error) {
		a, err := clientAddr(r, cfg.trusted)
		if err != nil {
			return "", err
		}
		return ipKey(a, cfg.v6bits), nil
	}, nil
}

// clientAddr is the peer, or behind trusted proxies the right-most
// untrusted address they forwarded.
func clientAddr(r *http.Request, trusted []netip.Prefix) (netip.Addr, error) {
	peer, err := parseHostPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: remote address %q: %v", ErrNoKey, r.RemoteAddr, err)
	}
	if !isTrusted(peer, trusted) {
		return peer, nil
	}
	hops := r.Header.Values("X-Forwarded-For")
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			s := strings.TrimSpace(parts[j])
			if s == "" {
				continue
			}
			a, err := parseHostPort(s)
			if err != nil {
				// Appended by a proxy we trust, so not the client's doing;
				// but nothing sound can be keyed on it.
				return netip.Addr{}, fmt.Errorf("%w: X-Forwarded-For entry %q: %v", ErrNoKey, s, err)
			}
			if !isTrusted(a, trusted) {
				return a, nil
			}
			client = a
		}
	}
	return client, nil // every hop is trusted: the farthest one
}

// parseHostPort reads "host:port", "[v6]:port" or a bare address.
func parseHostPort(s string) (netip.Addr, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), nil
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, errors.New("not an IP address")
	}
	return a.Unmap().WithZone(""), nil
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ipKey returns the key of a: "ip:" and a itself for IPv4, its prefix of
// bits for IPv6, in one allocation.
func ipKey(a netip.Addr, bits int) string {
	var buf [64]byte
	b := append(buf[:0], prefixIP...)
	if a.Is4() || bits >= 128 {
		return string(a.AppendTo(b))
	}
	p, _ := a.Prefix(bits)
	return string(p.AppendTo(b))
}

// KeyByHeader returns a KeyFunc keying requests by the value of a header
// (a user id set by an authenticating proxy in front, a tenant): the last
// value, trimmed, when the header is repeated. The last, because a proxy
// that adds the header appends it after whatever the client sent: a client
// that sends someone else's value first must not spend that one's quota.
// It fails, matching ErrNoKey, when the header is absent, empty or longer
// than 256 bytes. Use it only for a header that clients cannot choose
// freely, or a client could give every request a new key; WithMaxKeys on
// the limiter bounds what that costs.
func KeyByHeader(name string) KeyFunc {
	canon := http.CanonicalHeaderKey(name)
	prefix := prefixHeader + canon + ":"
	return func(r *http.Request) (string, error) {
		v := strings.TrimSpace(lastValue(r.Header, canon))
		if err := checkKey(v, canon); err != nil {
			return "", err
		}
		return prefix + v, nil
	}
}

// KeyByAPIKey returns a KeyFunc keying requests by their API key, taken
// from "Authorization: Bearer KEY" or else from the X-API-Key header. Only
// keys for which valid returns true are keys: an unknown one fails,
// matching ErrNoKey, so that made-up keys cannot each get a quota of their
// own (combine with FirstKey to limit such requests by address instead).
// A nil valid accepts every key: use it only behind something that checks
// them.
func KeyByAPIKey(valid func(apiKey string) bool) KeyFunc {
	return func(r *http.Request) (string, error) {
		k := ""
		if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
			k = strings.TrimSpace(auth[7:])
		} else {
			k = strings.TrimSpace(r.Header.Get("X-Api-Key"))
		}
		if err := checkKey(k, "API key"); err != nil {
			return "", err
		}
		if valid != nil && !valid(k) {
			return "", fmt.Errorf("%w: unknown API key", ErrNoKey)
		}
		return prefixAPIKey + k, nil
	}
}

func checkKey(v, what string) error {
	switch {
	case v == "":
		return fmt.Errorf("%w: no %s", ErrNoKey, what)
	case len(v) > maxKeyLen:
		return fmt.Errorf("%w: %s longer than %d bytes", ErrNoKey, what, maxKeyLen)
	}
	return nil
}

// FirstKey returns a KeyFunc that tries each of fns in order and returns
// the first key found: FirstKey(KeyByAPIKey(valid), byIP) limits clients
// with a known API key by their key and everyone else by address. It fails
// with the last error when none finds one. Nil entries are skipped.
func FirstKey(fns ...KeyFunc) KeyFunc {
	return func(r *http.Request) (string, error) {
		err := fmt.Errorf("%w: no key function", ErrNoKey)
		for _, f := range fns {
			if f == nil {
				continue
			}
			var k string
			if k, err = f(r); err == nil {
				return k, nil
			}
		}
		return "", err
	}
}

// lastValue is the last value of the header canon (in canonical form), ""
// if there is none.
func lastValue(h http.Header, canon string) string {
	vs := h[canon]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}
