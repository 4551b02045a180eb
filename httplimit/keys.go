package httplimit

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/clientip"
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

// KeyByAll returns a KeyFunc whose key is made of every one of fns' keys,
// in order: KeyByAll(byIP, KeyByRoute(mux)) limits each client on each
// route, KeyByAll(KeyByAPIKey(valid), KeyByMethod()) each API key per
// method. Each part is written with its length, so no part can be made to
// look like two (an API key "a|ip:1.2.3.4" is not the API key "a" and the
// address 1.2.3.4). It fails with the first part's error. Nil entries are
// skipped.
func KeyByAll(fns ...KeyFunc) KeyFunc {
	return func(r *http.Request) (string, error) {
		var b []byte
		for _, f := range fns {
			if f == nil {
				continue
			}
			k, err := f(r)
			if err != nil {
				return "", err
			}
			b = strconv.AppendInt(b, int64(len(k)), 10)
			b = append(b, ':')
			b = append(b, k...)
			b = append(b, ';')
		}
		if b == nil {
			return "", fmt.Errorf("%w: no key function", ErrNoKey)
		}
		return string(b), nil
	}
}

// KeyByMethod returns a KeyFunc keying requests by their method, for
// KeyByAll. Methods that are not tokens fail, matching ErrNoKey.
func KeyByMethod() KeyFunc {
	return func(r *http.Request) (string, error) {
		m := r.Method
		if m == "" {
			m = http.MethodGet
		}
		if !clientip.IsToken(m) || len(m) > 32 {
			return "", fmt.Errorf("%w: method %q", ErrNoKey, clientip.Clip(m))
		}
		return "method:" + m, nil
	}
}

// KeyByRoute returns a KeyFunc keying requests by the ServeMux pattern
// that serves them ("GET /items/{id}"), so that every item is one route,
// for KeyByAll. The middleware may wrap mux itself: the pattern is looked
// up in mux, not read from the request. A request no pattern matches is
// keyed "route:" alone, one key for all of them.
func KeyByRoute(mux *http.ServeMux) KeyFunc {
	if mux == nil {
		panic("httplimit: KeyByRoute with a nil ServeMux")
	}
	return func(r *http.Request) (string, error) {
		pattern := r.Pattern
		if pattern == "" {
			_, pattern = mux.Handler(r)
		}
		return "route:" + pattern, nil
	}
}
