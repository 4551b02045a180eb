package clientip

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/sluicehq/sluice/internal/configerr"
)

// Header is the header (or metadata key) the trusted proxies write the
// client in.
type Header uint8

// The headers a trusted proxy may name the client in.
const (
	XForwardedFor Header = iota // the default
	Forwarded                   // RFC 7239
	XRealIP                     // one address, set by the nearest proxy
)

// ParseHeader returns the Header of name, compared case-insensitively.
func ParseHeader(name string) (Header, bool) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "x-forwarded-for":
		return XForwardedFor, true
	case "forwarded":
		return Forwarded, true
	case "x-real-ip":
		return XRealIP, true
	}
	return 0, false
}

// MaxNodeLen bounds an obfuscated identifier a proxy names a client by: a
// client must not make a limiter hold megabytes of key.
const MaxNodeLen = 256

// Hop is a client as a trusted proxy names it: an address, or an
// obfuscated identifier (RFC 7239 6.3, "_hidden"). Neither is set when no
// proxy named one.
type Hop struct {
	Addr netip.Addr
	Node string
}

// Client reads the client from values, the lines of header h in the order
// they came, of a request that a trusted proxy sent.
func (h Header) Client(values []string, trusted []netip.Prefix) (Hop, error) {
	switch h {
	case Forwarded:
		return rightmostForwarded(values, trusted)
	case XRealIP:
		v := ""
		if len(values) > 0 {
			v = strings.TrimSpace(values[len(values)-1])
		}
		if v == "" {
			return Hop{}, nil
		}
		a, err := ParseHostPort(v)
		if err != nil {
			return Hop{}, fmt.Errorf("X-Real-IP %q: %v", Clip(v), err)
		}
		return Hop{Addr: a}, nil
	}
	return rightmostForwardedFor(values, trusted)
}

// rightmostForwardedFor is the right-most untrusted address of the
// X-Forwarded-For lines, or the farthest trusted one. Entries left of the
// client are never parsed: the client wrote them.
func rightmostForwardedFor(lines []string, trusted []netip.Prefix) (Hop, error) {
	var client Hop
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for rest != "" {
			var s string
			if j := strings.LastIndexByte(rest, ','); j >= 0 {
				rest, s = rest[:j], rest[j+1:]
			} else {
				rest, s = "", rest
			}
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			a, err := ParseHostPort(s)
			if err != nil {
				// Appended by a proxy we trust, so not the client's doing;
				// but nothing sound can be keyed on it.
				return Hop{}, fmt.Errorf("X-Forwarded-For entry %q: %v", Clip(s), err)
			}
			client = Hop{Addr: a}
			if !IsTrusted(a, trusted) {
				return client, nil
			}
		}
	}
	return client, nil
}

// ParseTrusted reads a trusted proxy for package pkg's options: a CIDR or
// an address, IPv4-mapped forms made IPv4. Its errors match
// permits.ErrInvalidConfig.
func ParseTrusted(pkg, s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return netip.Prefix{}, configerr.Errorf(pkg, "trusted proxy %q is neither a CIDR nor an address", s)
		}
		a = a.WithZone("").Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	if p.Addr().Is4In6() {
		// Addresses are compared unmapped, so a mapped CIDR as written
		// would match nothing.
		if p.Bits() < 96 {
			return netip.Prefix{}, configerr.Errorf(pkg, "trusted proxy %q mixes IPv4-mapped and other IPv6 addresses: name the IPv4 part as IPv4", s)
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// ParseHostPort reads "host:port", "[v6]:port" or a bare address, unmapped
// and without a zone.
func ParseHostPort(s string) (netip.Addr, error) {
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

// IsTrusted reports whether a is in one of trusted.
func IsTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Key returns prefix and a itself for IPv4, a's prefix of bits for IPv6,
// in one allocation: the key of one client, since one client usually has a
// whole IPv6 /64 and could otherwise rotate through its addresses.
func Key(prefix string, a netip.Addr, bits int) string {
	var buf [64]byte
	b := append(buf[:0], prefix...)
	if a.Is4() || bits >= 128 {
		return string(a.AppendTo(b))
	}
	p, _ := a.Prefix(bits)
	return string(p.AppendTo(b))
}

// Clip bounds what of a hostile value an error quotes.
func Clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
