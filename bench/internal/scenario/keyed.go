package scenario

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-chi/httprate"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
)

// KeyedRate and KeyedBurst configure every per-key limit of the keyed
// scenarios: 100 requests per minute, bursts of 100, the shape of a per-IP
// API limit. httprate gets the same 100 per minute (its sliding window of
// two fixed windows has no burst parameter).
var (
	KeyedRate  = algorithms.PerMinute(100)
	KeyedBurst = int64(100)
)

// SluiceKeyed returns a keyed limiter whose keys each own a GCRA of rate
// and burst.
func SluiceKeyed(rate algorithms.Rate, burst int64, opts ...keyed.Option) (*keyed.Limiter[string], error) {
	return keyed.New(func(string) (algorithms.Algorithm, error) { return algorithms.NewGCRA(rate, burst) }, opts...)
}

// HTTPRate returns httprate's limiter of KeyedRate's count per its period,
// keyed by whatever key is passed to OnLimit.
func HTTPRate() *httprate.RateLimiter {
	return httprate.NewRateLimiter(int(KeyedRate.Count), KeyedRate.Per)
}

// ZipfKeys returns n draws of keys "k0".."k(keys-1)" under a Zipf
// distribution of exponent s (rank 0 the most frequent), seeded.
func ZipfKeys(n, keys int, s float64, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	z := rand.NewZipf(rng, s, 1, uint64(keys-1))
	names := make([]string, keys)
	out := make([]string, n)
	for i := range out {
		k := z.Uint64()
		if names[k] == "" {
			names[k] = "k" + strconv.FormatUint(k, 10)
		}
		out[i] = names[k]
	}
	return out
}

// cursor hands each loop of a Micro its own stretch of a key sequence.
type cursor struct {
	keys []string
	next atomic.Uint64
}

// loop returns the keys one call of a Micro's loop walks: n of them from a
// fresh offset, wrapping around.
func (c *cursor) walk(n int, f func(string)) {
	start := int(c.next.Add(uint64(n)) - uint64(n))
	for i := range n {
		f(c.keys[(start+i)%len(c.keys)])
	}
}

// Keyed returns the subjects of a decision on a key drawn from keys:
// sluice's TryAcquire and TryAcquireQuota (the decision with what a
// response's RateLimit fields need) on a keyed GCRA, and httprate's
// OnLimit, its whole per-request decision (which also sets its three
// X-RateLimit headers on a reused header map).
func Keyed(keys []string) []Micro {
	c := &cursor{keys: keys}
	return []Micro{
		{Name: "sluice keyed TryAcquire", New: func() (func(int), func(), error) {
			l, err := SluiceKeyed(KeyedRate, KeyedBurst)
			if err != nil {
				return nil, nil, err
			}
			return func(n int) { c.walk(n, func(k string) { _, _ = l.TryAcquire(k, 1) }) }, func() { _ = l.Close() }, nil
		}},
		{Name: "sluice keyed TryAcquireQuota", New: func() (func(int), func(), error) {
			l, err := SluiceKeyed(KeyedRate, KeyedBurst)
			if err != nil {
				return nil, nil, err
			}
			return func(n int) { c.walk(n, func(k string) { _, _, _ = l.TryAcquireQuota(k, 1) }) }, func() { _ = l.Close() }, nil
		}},
		{Name: "httprate OnLimit", New: func() (func(int), func(), error) {
			rl := HTTPRate()
			req, _ := http.NewRequest(http.MethodGet, "/", nil)
			return func(n int) {
				w := &discard{h: http.Header{}}
				c.walk(n, func(k string) { rl.OnLimit(w, req, k) })
			}, func() {}, nil
		}},
	}
}

// discard is a ResponseWriter that keeps one header map and drops the rest.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// Middleware returns the subjects of a request through a handler that
// writes nothing, from one of 1000 client addresses in turn: the bare
// handler (the baseline), sluice's httplimit.Middleware over a keyed GCRA
// keyed by IP, enforcing and in shadow mode (WithShadow: the same decision
// and fields, a refusal never sent), and httprate.LimitByIP. Every request
// passes: sluice's GCRA is one unit a second with a burst of 10^8, so no
// key is ever full again during a run (none is dropped and remade: the
// steady state of a server's active clients); httprate's limit is 2^30
// per second.
func Middleware() []Micro {
	return middleware(algorithms.PerSecond(1), 100_000_000, 1<<30, time.Second)
}

// MiddlewareRefused is Middleware with limits of one request an hour, so
// that every request but each client's first is refused: sluice's
// enforcing subject answers 429 with its problem body, the shadow one
// calls its hook and serves the request, httprate answers 429.
func MiddlewareRefused() []Micro { return middleware(algorithms.PerHour(1), 1, 1, time.Hour) }

func middleware(rate algorithms.Rate, burst int64, peerLimit int, peerWindow time.Duration) []Micro {
	reqs := make([]*http.Request, 1000)
	for i := range reqs {
		reqs[i], _ = http.NewRequest(http.MethodGet, "/", nil)
		reqs[i].RemoteAddr = fmt.Sprintf("10.%d.%d.%d:4242", i>>16&255, i>>8&255, i&255)
	}
	var next atomic.Uint64
	// Every client is served once before the loop is measured: each run
	// makes its subject afresh, and a client's first request (its key, its
	// state) is not the steady state measured here.
	serve := func(h http.Handler) func(int) {
		loop := func(n int) {
			w := &discard{h: http.Header{}}
			start := int(next.Add(uint64(n)) - uint64(n))
			for i := range n {
				clear(w.h)
				h.ServeHTTP(w, reqs[(start+i)%len(reqs)])
			}
		}
		loop(len(reqs))
		return loop
	}
	bare := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	sluice := func(opts ...httplimit.Option) func() (func(int), func(), error) {
		return func() (func(int), func(), error) {
			l, err := SluiceKeyed(rate, burst)
			if err != nil {
				return nil, nil, err
			}
			byIP, err := httplimit.KeyByIP()
			if err != nil {
				return nil, nil, err
			}
			return serve(httplimit.Middleware(l, byIP, opts...)(bare)), func() { _ = l.Close() }, nil
		}
	}
	return []Micro{
		{Name: "bare handler", New: func() (func(int), func(), error) { return serve(bare), func() {}, nil }},
		{Name: "sluice httplimit", New: sluice()},
		{Name: "sluice httplimit shadow", New: sluice(httplimit.WithShadow(nil))},
		{Name: "httprate LimitByIP", New: func() (func(int), func(), error) {
			return serve(httprate.LimitBy(peerLimit, peerWindow, httprateByPeer)(bare)), func() {}, nil
		}},
	}
}

// httprateByPeer keys by the TCP peer, canonicalised as httprate does (an
// IPv6 peer by its /64): what httprate.LimitByIP does, which httprate
// deprecated (it is the proxy's address behind a proxy) and sluice's
// KeyByIP does without trusted proxies, so both sides do the same work.
func httprateByPeer(r *http.Request) (string, error) {
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	return httprate.CanonicalizeIP(ip), nil
}

// KeyedMemory is what a run of n distinct keys costs: the live heap per key
// while they are active, and the live heap left once they have gone idle,
// both above the heap of the limiter made and used once, before the keys.
type KeyedMemory struct {
	PerKey   float64 // bytes per active key
	IdleHeap float64 // bytes left after the keys went idle
	Live     int     // keys live when the active ones were weighed (sluice; httprate: n)
}

// SluiceKeyedMemory makes n keys active on a keyed GCRA whose keys are full
// again a while after one use (one unit every keyedRefill(n), burst 10),
// weighs them, waits until the owners have dropped them all, and weighs
// what is left. The bytes are shared among the keys live at the weighing:
// the refill outlasts making the keys, so that is all n of them unless the
// machine is very slow, and Live says how many.
func SluiceKeyedMemory(n int) (KeyedMemory, error) {
	keys := distinctKeys(n)
	var m0, m1, m2 runtime.MemStats
	l, err := SluiceKeyed(algorithms.Every(keyedRefill(n)), 10)
	if err != nil {
		return KeyedMemory{}, err
	}
	defer l.Close()
	if _, err := l.TryAcquire("before", 1); err != nil { // the limiter's own, used once
		return KeyedMemory{}, err
	}
	gc()
	runtime.ReadMemStats(&m0)
	for _, k := range keys {
		if _, err := l.TryAcquire(k, 1); err != nil {
			return KeyedMemory{}, err
		}
	}
	gc()
	runtime.ReadMemStats(&m1)
	live := l.Stats().Keys - 1
	if err := waitUntil("idle keys dropped", func() bool { return l.Stats().Keys == 0 }); err != nil {
		return KeyedMemory{}, err
	}
	gc()
	runtime.ReadMemStats(&m2)
	runtime.KeepAlive(keys)
	return KeyedMemory{
		PerKey:   (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / float64(max(live, 1)),
		IdleHeap: float64(m2.HeapAlloc) - float64(m0.HeapAlloc),
		Live:     live,
	}, nil
}

// keyedRefill is how long a key of SluiceKeyedMemory takes to be full
// again after its one use: longer than making n keys takes (a few
// microseconds each on a slow machine), so that none is dropped before the
// weighing.
func keyedRefill(n int) time.Duration {
	return max(2*time.Second, time.Duration(n)*5*time.Microsecond)
}

// HTTPRateMemory does the same with httprate over a window of the given
// length, longer than making the keys takes: its counters for the keys are
// cleared by the first request two windows later, which is what the second
// weighing follows.
func HTTPRateMemory(n int, window time.Duration) (KeyedMemory, error) {
	keys := distinctKeys(n)
	var m0, m1, m2 runtime.MemStats
	rl := httprate.NewRateLimiter(1000, window)
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	w := &discard{h: http.Header{}}
	rl.OnLimit(w, req, "before")
	gc()
	runtime.ReadMemStats(&m0)
	for _, k := range keys {
		rl.OnLimit(w, req, k)
	}
	gc()
	runtime.ReadMemStats(&m1)
	time.Sleep(2*window + window/2) // every key is out of both windows
	rl.OnLimit(w, req, "after")
	gc()
	runtime.ReadMemStats(&m2)
	runtime.KeepAlive(keys)
	runtime.KeepAlive(rl)
	return KeyedMemory{
		PerKey:   (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / float64(n),
		IdleHeap: float64(m2.HeapAlloc) - float64(m0.HeapAlloc),
		Live:     n,
	}, nil
}

// distinctKeys returns n distinct keys, made before any weighing so that
// their strings are not counted.
func distinctKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "client-" + strconv.Itoa(i)
	}
	return keys
}
