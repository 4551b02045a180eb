package testutil

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
)

// PipeServer serves h on a real http.Server over in-memory connections
// (net.Pipe), which, unlike sockets, block durably: it runs inside a
// synctest bubble, in virtual time. The client it returns dials it for
// every host, and every connection comes from PipeClientAddr. The server
// is closed, and its goroutine waited for, when t ends.
func PipeServer(t testing.TB, h http.Handler) *http.Transport {
	t.Helper()
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	tr := &http.Transport{DialContext: ln.dial}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = srv.Close()
		<-served
	})
	return tr
}

// PipeClientAddr is the remote address of every connection PipeServer's
// server accepts: 203.0.113.7, a documentation address.
var PipeClientAddr net.Addr = &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 4711}

type pipeListener struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 80} }

// fromClient is the server's side of a pipe, from PipeClientAddr.
type fromClient struct{ net.Conn }

func (fromClient) RemoteAddr() net.Addr { return PipeClientAddr }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- fromClient{server}:
		return client, nil
	case <-l.done:
		return nil, errors.New("pipe listener closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
