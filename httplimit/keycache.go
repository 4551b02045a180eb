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
// peer that is not a trusted proxy). The table is two-way: a hash of the
// peer's host picks a pair of slots, the latest host first, the one
// before it second, so that two busy clients whose hosts pick the same
// pair do not evict each other (one-way, 1000 clients in turn missed a
// third of the time in 1024 slots). A client rotating addresses only
// misses, and pays what a key costs without the cache and one entry more.
// Safe for concurrent use: an entry never changes once stored, and a
// reader that sees a pair half moved at worst misses.
type keyCache struct {
	seed  maphash.Seed
	slots [keyCacheSlots]atomic.Pointer[cachedKey]
}

// 4096 slots of 8 B, and at most as many entries of about 50 B, per
// KeyByIP.
const (
	keyCacheBits  = 12
	keyCacheSlots = 1 << keyCacheBits
)

type cachedKey struct{ host, key string }

func newKeyCache() *keyCache { return &keyCache{seed: maphash.MakeSeed()} }

// get returns the key kept for the peer host (see peerHost).
func (c *keyCache) get(host string) (string, bool) {
	pair := c.pair(host)
	for i := range pair {
		if e := pair[i].Load(); e != nil && e.host == host {
			return e.key, true
		}
	}
	return "", false
}

// put keeps key for host first in its pair, the pair's latest second.
func (c *keyCache) put(host, key string) {
	pair := c.pair(host)
	pair[1].Store(pair[0].Load())
	pair[0].Store(&cachedKey{host: host, key: key})
}

func (c *keyCache) pair(host string) []atomic.Pointer[cachedKey] {
	i := maphash.String(c.seed, host) >> (64 - keyCacheBits) &^ 1
	return c.slots[i : i+2 : i+2]
}

// peerHost returns what of RemoteAddr s its key depends on: s without its
// port when the rest is unambiguous (an IPv4 address or a name, or an IPv6
// address in brackets), else s whole ("::1", where the last colon is the
// address's own). Every s with the same peerHost parses to the same
// address (parseHostPort reads the host of s:port whatever the port), so
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
