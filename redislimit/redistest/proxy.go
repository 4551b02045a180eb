package redistest

import (
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy on loopback in front of a Server, for tests of
// what a client does when the network fails it. It injects three faults,
// each chosen per command by a function the test sets (a predicate, or
// AtRate for a share of them):
//
//   - CutReplies: forward the command, then cut the connection when the
//     reply comes, before forwarding any of it. The command ran; the
//     client sees the connection drop, and go-redis sends the command
//     again on a new one (MaxRetries, 3 by default).
//   - DropCommands: never forward the command, and cut the connection.
//     The command did not run; the client sees the same drop.
//   - DelayReplies: hold the reply for a while before forwarding it, as
//     a slow network or a busy server would.
//
// A command is one read of the client's bytes (a command, or a pipeline
// of them); for each, the proxy asks DropCommands' function first, then
// CutReplies', then DelayReplies', and injects the first fault chosen.
// Faults counts what it injected. Its methods are safe for concurrent
// use.
type Proxy struct {
	// Addr is the proxy's host:port, for the client's Options.Addr.
	Addr   string
	target string
	l      net.Listener
	cut    atomic.Pointer[func(cmd []byte) bool]
	drop   atomic.Pointer[func(cmd []byte) bool]
	delay  atomic.Pointer[func(cmd []byte) time.Duration]
	cuts   atomic.Int64
	drops  atomic.Int64
	delays atomic.Int64
	done   chan struct{} // closed by Close: ends the replies held

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Faults counts the faults a Proxy injected.
type Faults struct {
	Cut     int // replies cut after their command ran
	Dropped int // commands never forwarded
	Delayed int // replies held before they were forwarded
}

// Total is the number of faults of every kind.
func (f Faults) Total() int { return f.Cut + f.Dropped + f.Delayed }

// Proxy starts a proxy in front of s, closed when t ends.
func (s *Server) Proxy(t testing.TB) *Proxy {
	t.Helper()
	return NewProxy(t, s.Addr)
}

// NewProxy starts a proxy in front of the server at addr (host:port),
// closed when t ends: for a process that did not start the server, such
// as a test's child process.
func NewProxy(t testing.TB, addr string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: proxy: %v", err)
	}
	p := &Proxy{Addr: l.Addr().String(), target: addr, l: l, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// CutReplies makes the proxy cut each connection whose client sends what
// f reports true for, once the server's reply to it comes and before
// forwarding any of it. f runs on the proxy's goroutines; nil forwards
// every reply again.
func (p *Proxy) CutReplies(f func(cmd []byte) bool) { p.cut.Store(orNil(f)) }

// DropCommands makes the proxy cut each connection whose client sends what
// f reports true for, instead of forwarding it: the server never sees the
// command. f runs on the proxy's goroutines; nil forwards every command
// again.
func (p *Proxy) DropCommands(f func(cmd []byte) bool) { p.drop.Store(orNil(f)) }

// DelayReplies makes the proxy hold the reply to each command for as long
// as f returns for it (0 or less: not at all) before forwarding it; the
// connection carries nothing else from the server meanwhile, as a slow
// link would not. f runs on the proxy's goroutines; nil holds nothing
// again.
func (p *Proxy) DelayReplies(f func(cmd []byte) time.Duration) {
	if f == nil {
		p.delay.Store(nil)
		return
	}
	p.delay.Store(&f)
}

// orNil is a pointer to f, or nil for no f.
func orNil(f func(cmd []byte) bool) *func(cmd []byte) bool {
	if f == nil {
		return nil
	}
	return &f
}

// Cuts returns how many replies the proxy has cut.
func (p *Proxy) Cuts() int { return int(p.cuts.Load()) }

// Faults returns how many faults of each kind the proxy has injected.
func (p *Proxy) Faults() Faults {
	return Faults{Cut: int(p.cuts.Load()), Dropped: int(p.drops.Load()), Delayed: int(p.delays.Load())}
}

// AtRate returns a predicate that is true for about a share rate of the
// commands match reports true for (every command when match is nil), at
// random from a source seeded with seed: a fault at a rate, for
// CutReplies or DropCommands. It is safe for concurrent use.
func AtRate(rate float64, seed uint64, match func(cmd []byte) bool) func(cmd []byte) bool {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(cmd []byte) bool {
		if match != nil && !match(cmd) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		return rng.Float64() < rate
	}
}

// Close stops accepting, closes every connection, drops the replies held
// and waits for the proxy's goroutines. It is idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.done)
		_ = p.l.Close()
		for c := range p.conns {
			_ = c.Close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}
