package sluice_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
)

// pipeListener is a net.Listener of in-memory connections, so that a real
// http.Server runs inside a synctest bubble (a socket is not durably
// blocking; a net.Pipe is).
type pipeListener struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
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

// fromAddr is a connection from one client address.
type fromAddr struct{ net.Conn }

func (fromAddr) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 4711} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- fromAddr{server}:
		return client, nil
	case <-l.done:
		return nil, errors.New("closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestTheReadmePerIPLimitAdmits100InAnyMinute plays the README's per-IP
// limit, as it is written there, on a real http.Server for three minutes of
// virtual time, one request every 100 ms from one address: 100 are
// admitted in the first minute and no more than 100 in any minute (a GCRA
// of 100/min with a burst of 100 admitted 199 in the first).
func TestTheReadmePerIPLimitAdmits100InAnyMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		perIP, err := keyed.New(func(string) (algorithms.Algorithm, error) {
			return algorithms.NewSlidingWindow(algorithms.PerMinute(100))
		})
		require.NoError(t, err)
		defer perIP.Close()
		byIP, err := httplimit.KeyByIP()
		require.NoError(t, err)
		ln := newPipeListener()
		srv := &http.Server{Handler: httplimit.Middleware(perIP, byIP)(http.NotFoundHandler())}
		go func() { _ = srv.Serve(ln) }()
		tr := &http.Transport{DialContext: ln.dial}
		defer func() {
			tr.CloseIdleConnections()
			_ = srv.Close()
		}()
		c := &http.Client{Transport: tr}

		t0 := time.Now()
		var admitted []time.Duration
		for range 1800 {
			resp, err := c.Get("http://api.example/")
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Contains(t, []int{http.StatusNotFound, http.StatusTooManyRequests}, resp.StatusCode)
			if resp.StatusCode == http.StatusNotFound { // passed to the handler
				admitted = append(admitted, time.Since(t0))
			}
			time.Sleep(100 * time.Millisecond)
		}
		first := 0
		for _, at := range admitted {
			if at < time.Minute {
				first++
			}
		}
		assert.Equal(t, 100, first, "the first minute")
		for i := range admitted {
			j := i
			for j < len(admitted) && admitted[j]-admitted[i] < time.Minute {
				j++
			}
			require.LessOrEqual(t, j-i, 100, "the minute from %v", admitted[i])
		}
	})
}
