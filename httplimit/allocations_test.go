package httplimit_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
)

// headerOnly is a ResponseWriter that keeps one header map, cleared per
// request as a server's is new: what the middleware allocates is its own.
type headerOnly struct{ h http.Header }

func (w *headerOnly) Header() http.Header         { return w.h }
func (w *headerOnly) Write(p []byte) (int, error) { return len(p), nil }
func (w *headerOnly) WriteHeader(int)             {}

// clients returns requests from n client addresses, one each.
func clients(n int) []*http.Request {
	reqs := make([]*http.Request, n)
	for i := range reqs {
		reqs[i], _ = http.NewRequest(http.MethodGet, "/", nil)
		reqs[i].RemoteAddr = fmt.Sprintf("10.0.%d.%d:4242", i>>8&255, i&255)
	}
	return reqs
}

// Issue 27: the allowed path costs at most one allocation with both
// RateLimit fields, for clients that come back (the key of each is kept,
// and the fields' values are shared by responses that say the same).
func TestAnAllowedRequestCostsOneAllocationWithTheFields(t *testing.T) {
	lim := gcraLimiter(t, algorithms.PerSecond(1), 1_000_000)
	for _, shadow := range []bool{false, true} {
		var opts []httplimit.Option
		if shadow {
			opts = append(opts, httplimit.WithShadow(nil))
		}
		h := httplimit.Middleware(lim, byIP(t), opts...)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		reqs := clients(100)
		w := &headerOnly{h: http.Header{}}
		i := 0
		serve := func() {
			clear(w.h)
			h.ServeHTTP(w, reqs[i%len(reqs)])
			i++
		}
		for range len(reqs) {
			serve() // every client seen once
		}
		allocs := testing.AllocsPerRun(10*len(reqs), serve)
		assert.LessOrEqual(t, allocs, 1.0, "shadow %v", shadow)
		require.Len(t, w.h.Values("RateLimit"), 1)
		require.Len(t, w.h.Values("RateLimit-Policy"), 1)
	}
}

// The cache of keys never answers with another client's key, whatever
// the number of clients (more than it has slots) and their order.
func TestEveryClientKeepsItsOwnKeyPastTheCache(t *testing.T) {
	key := byIP(t)
	reqs := clients(5000)
	for round := range 2 {
		for i, r := range reqs {
			k, err := key(r)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("ip:10.0.%d.%d", i>>8&255, i&255), k, "round %d", round)
		}
	}
	v6 := byIP(t) // IPv6 clients by their /64: one key per prefix
	for i := range 3000 {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = fmt.Sprintf("[2001:db8:%x::%x]:80", i%1500, i)
		k, err := v6(r)
		require.NoError(t, err)
		require.Equal(t, "ip:"+netip.MustParsePrefix(fmt.Sprintf("2001:db8:%x::/64", i%1500)).String(), k)
	}
	// Without a port, an IPv6 peer's last colon is its own: "::1" and
	// "::2" are two peers, not one with two ports.
	v4 := byIP(t, httplimit.IPv6Prefix(128))
	for round := range 2 {
		for _, c := range []struct{ remote, key string }{
			{"::1", "ip:::1"}, {"::2", "ip:::2"}, {"[::1]:80", "ip:::1"}, {"[::3]:80", "ip:::3"},
			{"1.2.3.4", "ip:1.2.3.4"}, {"1.2.3.4:80", "ip:1.2.3.4"}, {"1.2.3.5:80", "ip:1.2.3.5"},
		} {
			r, _ := http.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = c.remote
			k, err := v4(r)
			require.NoError(t, err)
			require.Equal(t, c.key, k, "%s, round %d", c.remote, round)
		}
	}
}
