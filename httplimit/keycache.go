package httplimit

import (
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// keyCache keeps the keys of the peers seen lately, so that a client that
// comes back (most of a server's requests come from clients it served a
// moment ago) costs neither a parse nor an allocation for its key: the key
// was most of the middleware's allocations, and parsing RemoteAddr a
// tenth of its time. Only keys that depend on the peer alone are kept (a
// peer that is not a trusted proxy). The table is four-way: a hash of the
// peer's host picks a set of four slots, latest first, so that busy
// clients whose hosts pick the same set do not evict each other. With 1000
// clients in turn, a request through the middleware made about 2
// allocations one-way in 1024 slots, 1.16 two-way in 4096, 1 four-way in
// 8192. A client rotating
// addresses only misses, and pays what a key costs without the cache and
// one entry more. Safe for concurrent use: an entry never changes once
// stored, and a reader that sees a set half moved at worst misses.
type keyCache struct {
	seed  maphash.Seed
	slots [keyCacheSlots]atomic.Pointer[cachedKey]
}

// 8192 slots of 8 B (64 KiB), and at most as many entries of about 50 B,
// per KeyByIP.
const (
	keyCacheBits  = 13
	keyCacheSlots = 1 << keyCacheBits
	keyCacheWays  = 4
)

type cachedKey struct{ host, key string }

func newKeyCache() *keyCache { return &keyCache{seed: maphash.MakeSeed()} }

// get returns the key kept for the peer host (see peerHost).
func (c *keyCache) get(host string) (string, bool) {
	set := c.set(host)
	for i := range set {
		if e := set[i].Load(); e != nil && e.host == host {
			return e.key, true
		}
	}
	return "", false
}

// put keeps key for host first in its set, dropping the set's oldest.
func (c *keyCache) put(host, key string) {
	set := c.set(host)
	for i := len(set) - 1; i > 0; i-- {
		set[i].Store(set[i-1].Load())
	}
	set[0].Store(&cachedKey{host: host, key: key})
}

func (c *keyCache) set(host string) []atomic.Pointer[cachedKey] {
	i := maphash.String(c.seed, host) >> (64 - keyCacheBits) &^ (keyCacheWays - 1)
	return c.slots[i : i+keyCacheWays : i+keyCacheWays]
}

// peerHost returns what of RemoteAddr s its key depends on: s without its
// port when the rest is unambiguous (an IPv4 address or a name, or an IPv6
// address in brackets), else s whole ("::1", where the last colon is the
// address's own). Every s with the same peerHost parses to the same
// address (clientip.ParseHostPort reads the host of s:port whatever the port), so
// the key kept for one is every one's.
func peerHost(s string) string {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s
	}
	if h := s[:i]; strings.HasSuffix(h, "]") || !strings.Contains(h, ":") {
		return h
	}
	return s
}
