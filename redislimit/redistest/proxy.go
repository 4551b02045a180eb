package redistest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy is a TCP proxy on loopback in front of a Server, for tests of
// what a client does when the network fails it after the server has
// answered: CutReplies makes it forward a command and then, instead of
// forwarding the reply, cut the connection. The command ran; the client
// sees the connection drop, and go-redis sends the command again on a new
// one (MaxRetries, 3 by default). Its methods are safe for concurrent use.
type Proxy struct {
	// Addr is the proxy's host:port, for the client's Options.Addr.
	Addr   string
	target string
	l      net.Listener
	cut    atomic.Pointer[func(cmd []byte) bool]
	cuts   atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Proxy starts a proxy in front of s, closed when t ends.
func (s *Server) Proxy(t testing.TB) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: proxy: %v", err)
	}
	p := &Proxy{Addr: l.Addr().String(), target: s.Addr, l: l, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// CutReplies makes the proxy cut each connection whose client sends what
// f reports true for (one read of the client's bytes: a command, or a
// pipeline of them), once the server's reply to it comes and before
// forwarding any of it. f runs on the proxy's goroutines; nil forwards
// everything again.
func (p *Proxy) CutReplies(f func(cmd []byte) bool) {
	if f == nil {
		p.cut.Store(nil)
		return
	}
	p.cut.Store(&f)
}

// Cuts returns how many replies the proxy has cut.
func (p *Proxy) Cuts() int { return int(p.cuts.Load()) }

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines. It is idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		_ = p.l.Close()
		for c := range p.conns {
			_ = c.Close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, u) {
			return
		}
		var armed atomic.Bool
		p.wg.Add(2)
		go p.pipe(c, u, func(b []byte) {
			if f := p.cut.Load(); f != nil && (*f)(b) {
				armed.Store(true) // before the server can answer
			}
		})
		go p.pipe(u, c, func([]byte) {
			if armed.Load() {
				p.cuts.Add(1)
				_ = c.Close()
				_ = u.Close()
			}
		})
	}
}

// track records a pair of connections to close with the proxy, unless it
// is closed already.
func (p *Proxy) track(c, u net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		_ = u.Close()
		return false
	}
	p.conns[c], p.conns[u] = struct{}{}, struct{}{}
	return true
}

// pipe copies from src to dst, calling seen with each read before it is
// written (it may close both), until either side fails; then it closes
// both.
func (p *Proxy) pipe(src, dst net.Conn, seen func([]byte)) {
	defer p.wg.Done()
	defer func() {
		_ = src.Close()
		_ = dst.Close()
		p.mu.Lock()
		delete(p.conns, src)
		delete(p.conns, dst)
		p.mu.Unlock()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			seen(buf[:n])
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
