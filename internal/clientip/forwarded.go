package clientip

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// The Forwarded header of RFC 7239, read as far as keying needs: the for=
// of each element, right to left, stopping at the client.
//
//	Forwarded: for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"
//
// A for= value is an IPv4 address, an IPv6 address in brackets (quoted, as
// ':' is not a token character), either with a port, "unknown", or an
// obfuscated identifier ("_hidden", with an obfuscated port "_p" or not).

// rightmostForwarded is the right-most untrusted for= of the Forwarded
// lines, the farthest trusted one when every one is trusted, the farthest
// one known when a trusted proxy says "unknown", or the obfuscated
// identifier a trusted proxy gave its client. Elements left of the client
// are never parsed; a line is split into elements first, which fails only
// for a quote left open.
func rightmostForwarded(lines []string, trusted []netip.Prefix) (Hop, error) {
	var client Hop
	for i := len(lines) - 1; i >= 0; i-- {
		elems, err := splitOutsideQuotes(lines[i], ',')
		if err != nil {
			return Hop{}, fmt.Errorf("the Forwarded field: %v", err)
		}
		for j := len(elems) - 1; j >= 0; j-- {
			v, found, err := forParam(elems[j])
			if err != nil {
				return Hop{}, fmt.Errorf("the Forwarded element %q: %v", Clip(elems[j]), err)
			}
			if !found {
				continue // by=, proto=, host= only: nothing of the client
			}
			h, unknown, err := parseNode(v)
			switch {
			case err != nil:
				return Hop{}, fmt.Errorf("the Forwarded for=%q: %v", Clip(v), err)
			case unknown:
				return client, nil
			case h.Node != "":
				return h, nil
			}
			client = h
			if !IsTrusted(h.Addr, trusted) {
				return h, nil
			}
		}
	}
	return client, nil
}

// splitOutsideQuotes splits s at every sep outside a quoted-string, in
// which a backslash escapes the next byte. An open quote at the end is an
// error.
func splitOutsideQuotes(s string, sep byte) ([]string, error) {
	var parts []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	if quoted {
		return nil, errors.New("a quoted-string is not closed")
	}
	return append(parts, s[start:]), nil
}

// forParam returns the value of the element's for= pair, unquoted, and
// whether it has one. A later for= than the first is malformed (RFC 7239
// 4: each parameter at most once).
func forParam(elem string) (string, bool, error) {
	pairs, err := splitOutsideQuotes(elem, ';')
	if err != nil {
		return "", false, err
	}
	value, found := "", false
	for _, p := range pairs {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		name, v, ok := strings.Cut(p, "=")
		if !ok || !IsToken(name) {
			return "", false, errors.New("not a token=value pair")
		}
		if !strings.EqualFold(name, "for") {
			continue
		}
		if found {
			return "", false, errors.New("for= twice")
		}
		if value, err = pairValue(v); err != nil {
			return "", false, err
		}
		found = true
	}
	return value, found, nil
}

// pairValue is a token, or a quoted-string unquoted.
func pairValue(v string) (string, error) {
	if !strings.HasPrefix(v, `"`) {
		if !IsToken(v) {
			return "", errors.New("a value is a token or a quoted-string")
		}
		return v, nil
	}
	if len(v) < 2 || v[len(v)-1] != '"' {
		return "", errors.New("text after a quoted-string")
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		c := v[i]
		if c == '\\' {
			i++
			if i == len(v)-1 {
				return "", errors.New("an escape at the end of a quoted-string")
			}
			c = v[i]
		} else if c == '"' {
			return "", errors.New("text after a quoted-string")
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// parseNode reads a for= value: an address with or without a port, an
// obfuscated identifier, or "unknown".
func parseNode(v string) (h Hop, unknown bool, err error) {
	name, port := v, ""
	if strings.HasPrefix(v, "[") {
		end := strings.IndexByte(v, ']')
		if end < 0 {
			return Hop{}, false, errors.New("an IPv6 address without its ]")
		}
		name, port = v[1:end], v[end+1:]
		if port != "" && (port[0] != ':' || !validPort(port[1:])) {
			return Hop{}, false, errors.New("a bad port")
		}
		a, err := netip.ParseAddr(name)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return Hop{}, false, errors.New("not an IPv6 address in brackets")
		}
		return Hop{Addr: a.Unmap()}, false, nil
	}
	if i := strings.IndexByte(v, ':'); i >= 0 {
		name, port = v[:i], v[i+1:]
		if !validPort(port) {
			return Hop{}, false, errors.New("a bad port")
		}
	}
	switch {
	case strings.EqualFold(name, "unknown"):
		return Hop{}, true, nil
	case isObfuscated(name):
		if len(name) > MaxNodeLen {
			return Hop{}, false, fmt.Errorf("an identifier longer than %d bytes", MaxNodeLen)
		}
		return Hop{Node: name}, false, nil
	}
	a, err := netip.ParseAddr(name)
	if err != nil || !a.Is4() {
		return Hop{}, false, errors.New("not an IPv4 address, a bracketed IPv6 one, unknown or _obfuscated")
	}
	return Hop{Addr: a}, false, nil
}

// validPort is 1 to 5 digits, or an obfuscated port.
func validPort(p string) bool {
	if isObfuscated(p) {
		return true
	}
	return p != "" && len(p) <= 5 && allDigits(p)
}

// isObfuscated is "_" and one or more of ALPHA, DIGIT, ".", "_", "-".
func isObfuscated(s string) bool {
	if len(s) < 2 || s[0] != '_' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(isAlpha(c) || isDigit(c) || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// IsToken reports whether s is a non-empty run of tchar (RFC 9110 5.6.2).
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func allDigits(v string) bool {
	for i := range len(v) {
		if !isDigit(v[i]) {
			return false
		}
	}
	return true
}
