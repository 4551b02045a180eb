package redistest

import (
	"net"
	"sync/atomic"
	"time"
)

// cutNext is a connection's pending fault that cuts the next reply; a
// positive pending fault is a delay in ns.
const cutNext = -1

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
		// The fault chosen for the command under way, set before the
		// command is forwarded (so before the server can answer) and
		// taken by the first read of its reply.
		var pending atomic.Int64
		p.wg.Add(2)
		go p.pipe(c, u, func(b []byte) bool { return p.command(b, &pending) })
		go p.pipe(u, c, func([]byte) bool { return p.reply(pending.Swap(0)) })
	}
}

// command chooses the fault for a command read from a client and reports
// whether to forward it.
func (p *Proxy) command(b []byte, pending *atomic.Int64) bool {
	if f := p.drop.Load(); f != nil && (*f)(b) {
		p.drops.Add(1)
		return false
	}
	if f := p.cut.Load(); f != nil && (*f)(b) {
		pending.Store(cutNext)
		return true
	}
	if f := p.delay.Load(); f != nil {
		if d := (*f)(b); d > 0 {
			pending.Store(int64(d))
		}
	}
	return true
}

// reply injects the fault pending, if any, into the first read of a reply
// and reports whether to forward it.
func (p *Proxy) reply(pending int64) bool {
	switch {
	case pending == cutNext:
		p.cuts.Add(1)
		return false
	case pending > 0:
		p.delays.Add(1)
		t := time.NewTimer(time.Duration(pending))
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-p.done:
			return false
		}
	}
	return true
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

// pipe copies from src to dst, asking forward of each read whether to
// write it, until either side fails or forward says no; then it closes
// both, and the pipe the other way ends too.
func (p *Proxy) pipe(src, dst net.Conn, forward func([]byte) bool) {
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
			if !forward(buf[:n]) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
