package httplimit

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
)

// keyCache keeps the keys of the clients seen lately, one per slot of a
// table indexed by a hash of the address, so that a client that comes
// back (most of a server's requests come from clients it served a moment
// ago) costs no allocation for its key: the key was most of the
// middleware's allocations. A slot holds the latest address that hashed
// to it; a client rotating addresses only misses, and pays what a key
// costs without the cache and one entry more. Safe for concurrent use: an
// entry never changes once stored.
type keyCache struct {
	slots [keyCacheSlots]atomic.Pointer[cachedKey]
}

// keyCacheSlots is 1024 slots of 8 B, and at most as many entries of
// about 60 B, per KeyByIP.
const (
	keyCacheBits  = 10
	keyCacheSlots = 1 << keyCacheBits
)

type cachedKey struct {
	addr netip.Addr // as keyed: an IPv6 address masked to its prefix
	key  string
}

// key returns ipKey(a, bits), from the cache when a's was the latest in
// its slot.
func (c *keyCache) key(a netip.Addr, bits int) string {
	masked := a
	if !a.Is4() && bits < 128 {
		p, _ := a.Prefix(bits)
		masked = p.Addr()
	}
	b := masked.As16()
	h := (binary.LittleEndian.Uint64(b[:8])*0x9e3779b97f4a7c15 ^ binary.LittleEndian.Uint64(b[8:])) * 0xbf58476d1ce4e5b9
	slot := &c.slots[h>>(64-keyCacheBits)]
	if e := slot.Load(); e != nil && e.addr == masked {
		return e.key
	}
	k := ipKey(a, bits)
	slot.Store(&cachedKey{addr: masked, key: k})
	return k
}
