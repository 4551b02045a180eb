// Package redistest starts throwaway redis-server processes for tests and
// benchmarks: each on a free loopback port, with its working directory in
// a directory the caller owns (a t.TempDir()), no persistence, and the
// DEBUG command enabled so that tests can slow the server down. A server
// is killed when its test ends.
//
// When redis-server is not on PATH, Test skips the test, or fails it when
// the environment variable CI is set: CI installs Redis, so a missing
// server there is a broken setup, not a reason to pass.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotFound is returned by Start when redis-server is not on PATH.
var ErrNotFound = errors.New("redistest: redis-server not found on PATH")

// Server is one redis-server process. Its methods are safe for concurrent
// use.
type Server struct {
	// Addr is host:port, on the loopback interface.
	Addr  string
	dir   string
	port  int
	extra []string // more redis-server arguments

	mu   sync.Mutex
	cmd  *exec.Cmd
	exit chan struct{} // closed when cmd has been waited for
}

// startTimeout bounds how long a server may take to say it is ready.
const startTimeout = 10 * time.Second

// Start starts a redis-server on a free loopback port with its working
// directory in dir. It returns ErrNotFound if redis-server is not on PATH.
func Start(dir string) (*Server, error) { return start(dir, nil) }

func start(dir string, extra func(port int) []string) (*Server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, ErrNotFound
	}
	var last error
	for range 5 { // a free port may be taken before the server binds it
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, port: port}
		if extra != nil {
			s.extra = extra(port)
		}
		if last = s.start(); last == nil {
			return s, nil
		}
	}
	return nil, last
}

// Test starts a server for t and kills it when t ends. It skips t when
// redis-server is missing, unless CI is set, when it fails t.
func Test(t testing.TB) *Server {
	t.Helper()
	s, err := Start(t.TempDir())
	if errors.Is(err, ErrNotFound) && os.Getenv("CI") == "" {
		t.Skip("redis-server not found on PATH: install it (apt-get install redis-server) to run this test")
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Client returns a client of s, closed when t ends.
func (s *Server) Client(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	c := s.NewClient(opts...)
	t.Cleanup(func() { c.Close() })
	return c
}

// NewClient returns a client of s; the caller closes it.
func (s *Server) NewClient(opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: s.Addr}
	for _, f := range opts {
		f(o)
	}
	return redis.NewClient(o)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var versionRE = regexp.MustCompile(`v=(\d+)\.`)

// debugFlag enables DEBUG (off by default from Redis 7) where the server
// knows the directive; older servers allow DEBUG anyway.
func debugFlag() []string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return nil
	}
	if m := versionRE.FindSubmatch(out); m != nil {
		if major, _ := strconv.Atoi(string(m[1])); major >= 7 {
			return []string{"--enable-debug-command", "yes"}
		}
	}
	return nil
}

// start runs the server and waits until it logs that it accepts
// connections, or exits.
func (s *Server) start() error {
	args := append([]string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", "no",
		"--logfile", "", "--daemonize", "no",
	}, debugFlag()...)
	args = append(args, s.extra...)
	cmd := exec.Command("redis-server", args...)
	cmd.Dir = s.dir
	dieWithParent(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	exit := make(chan struct{})
	ready := make(chan struct{})
	var log strings.Builder
	var logMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			if log.Len() < 4096 {
				log.WriteString(line + "\n")
			}
			logMu.Unlock()
			if !said && strings.Contains(line, "Ready to accept connections") {
				said = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(exit)
	}()
	select {
	case <-ready:
	case <-exit:
		logMu.Lock()
		defer logMu.Unlock()
		return fmt.Errorf("redistest: redis-server on port %d exited: %s", s.port, log.String())
	case <-time.After(startTimeout):
		_ = cmd.Process.Kill()
		<-exit
		return fmt.Errorf("redistest: redis-server on port %d not ready after %v", s.port, startTimeout)
	}
	s.mu.Lock()
	s.cmd, s.exit = cmd, exit
	s.mu.Unlock()
	return nil
}

// Kill stops the server at once (SIGKILL), as a crash would, and waits for
// it to exit. Connections to it break mid-call. Killing a stopped server
// does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exit := s.cmd, s.exit
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exit
}

// Restart starts a stopped server again on the same port, empty: without
// persistence it has lost its keys and its scripts.
func (s *Server) Restart() error {
	s.Kill()
	return s.start()
}

// Close kills the server. It is idempotent.
func (s *Server) Close() { s.Kill() }
