package httplimit_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/httplimit"
)

// The forms a client address reaches the server in, behind proxies.
const (
	formXFF              = iota // X-Forwarded-For, the client's part on the proxies' line
	formForwardedOneLine        // Forwarded, the client's elements on the proxies' line
	formForwardedOwnLine        // Forwarded, the client's elements on a line of their own
	formRealIP                  // X-Real-IP after the client's own
	forms
)

// FuzzClientIPBehindTrustedProxies checks the spoofing argument: whatever
// a client writes into the header, the key is the address the trusted
// proxies appended for it (or, only where the client's text shares the
// proxies' line and leaves a quote open, a 400): never one the client
// chose. And no header, however hostile, makes KeyByIP panic or return an
// error that is not ErrNoKey or a key longer than a bound.
func FuzzClientIPBehindTrustedProxies(f *testing.F) {
	f.Add(uint8(0), "6.6.6.6", uint32(0xc0000201), false, uint64(0), uint8(1), "")
	f.Add(uint8(1), `for="6.6.6.6`, uint32(0xc0000201), false, uint64(0), uint8(0), `for=_x;by="[::1]"`)
	f.Add(uint8(1), `for=unknown, for="[2001:db8::1]:80"`, uint32(0), true, uint64(0x20010db8_00010002), uint8(2), `for="\"`)
	f.Add(uint8(2), `for=_hidden;proto=https`, uint32(0xcb007101), false, uint64(0), uint8(3), "\x00\xff")
	f.Add(uint8(3), "10.0.0.1", uint32(0x0a000001), false, uint64(0), uint8(0), "::ffff:1.2.3.4")
	trusted := []string{"10.0.0.0/8", "2001:db8:ffff::/48"}
	keys := map[int]httplimit.KeyFunc{}
	for form, header := range []string{"X-Forwarded-For", "Forwarded", "Forwarded", "X-Real-IP"} {
		k, err := httplimit.KeyByIP(httplimit.TrustProxies(trusted...), httplimit.ProxyHeader(header))
		if err != nil {
			f.Fatal(err)
		}
		keys[form] = k
	}
	f.Fuzz(func(t *testing.T, form uint8, clientPart string, v4 uint32, isV6 bool, v6hi uint64, hops uint8, junk string) {
		form %= forms
		client := untrustedAddr(v4, isV6, v6hi)
		want := expectedKey(client)
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "10.0.0.1:443"
		proxies := make([]string, hops%4)
		for i := range proxies {
			proxies[i] = fmt.Sprintf("10.0.%d.%d", i, hops)
		}
		spoofable := addSpoofedHeader(r, int(form), clientPart, client, proxies)
		got, err := keys[int(form)](r)
		switch {
		case err != nil && !(spoofable && errors.Is(err, httplimit.ErrNoKey)):
			t.Fatalf("form %d, %q: %v", form, r.Header, err)
		case err == nil && got != want:
			t.Fatalf("form %d, %q: key %q, want %q", form, r.Header, got, want)
		}

		// Any header at all, from a trusted peer or not.
		for _, k := range keys {
			for _, peer := range []string{"10.0.0.1:1", "192.0.2.1:1", junk} {
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				r.RemoteAddr = peer
				r.Header["X-Forwarded-For"] = []string{junk, clientPart}
				r.Header["Forwarded"] = []string{clientPart, junk}
				r.Header["X-Real-Ip"] = []string{junk}
				got, err := k(r)
				if err != nil && !errors.Is(err, httplimit.ErrNoKey) {
					t.Fatalf("%q: an error that is not ErrNoKey: %v", r.Header, err)
				}
				if len(got) > 300 {
					t.Fatalf("a key of %d bytes", len(got))
				}
			}
		}
	})
}

// untrustedAddr is an address outside the trusted CIDRs.
func untrustedAddr(v4 uint32, isV6 bool, v6hi uint64) netip.Addr {
	if isV6 {
		var b [16]byte
		for i := range 8 {
			b[i] = byte(v6hi >> (56 - 8*i))
		}
		b[0], b[15] = 0x20, 1 // 2000::/8, never IPv4-mapped; 2001:db8:ffff::/48 moved off below
		a := netip.AddrFrom16(b)
		if netip.MustParsePrefix("2001:db8:ffff::/48").Contains(a) {
			b[5] = 0
			a = netip.AddrFrom16(b)
		}
		return a
	}
	b := [4]byte{byte(v4 >> 24), byte(v4 >> 16), byte(v4 >> 8), byte(v4)}
	if b[0] == 10 {
		b[0] = 11
	}
	return netip.AddrFrom4(b)
}

func expectedKey(a netip.Addr) string {
	if a.Is4() {
		return "ip:" + a.String()
	}
	p, _ := a.Prefix(64)
	return "ip:" + p.String()
}

// addSpoofedHeader writes the header as a client and its trusted proxies
// would: the client's part first, then the client's address and every
// proxy's, appended by the proxies. It reports whether the client's text
// shares a line with the proxies', where an open quote of its own can make
// the line unreadable.
func addSpoofedHeader(r *http.Request, form int, clientPart string, client netip.Addr, proxies []string) bool {
	switch form {
	case formXFF:
		r.Header["X-Forwarded-For"] = []string{strings.Join(append([]string{clientPart, client.String()}, proxies...), ", ")}
	case formForwardedOneLine, formForwardedOwnLine:
		elems := []string{forwardedFor(client)}
		for _, p := range proxies {
			elems = append(elems, "for="+p+";proto=https")
		}
		if form == formForwardedOneLine {
			r.Header["Forwarded"] = []string{clientPart + ", " + strings.Join(elems, ", ")}
			return true
		}
		r.Header["Forwarded"] = []string{clientPart, strings.Join(elems, ", ")}
	case formRealIP:
		r.Header["X-Real-Ip"] = []string{clientPart, client.String()}
	}
	return false
}

// forwardedFor is a for= element as a proxy writes it.
func forwardedFor(a netip.Addr) string {
	if a.Is4() {
		return fmt.Sprintf(`for="%s:4711"`, a)
	}
	return fmt.Sprintf(`for="[%s]:4711"`, a)
}
