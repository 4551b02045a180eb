// Command httpserver is a per-IP rate-limited HTTP server on loopback, and
// a client that drives it past its limit and prints what it is told:
//
//	go run ./examples/httpserver          # serve and drive itself, then exit
//	go run ./examples/httpserver -serve   # only serve, on -addr, until interrupted
//
// Each client address gets 5 requests at once and 1 more every 200ms (GCRA,
// 300 per minute); /report costs 3. Every response carries the
// RateLimit-Policy and RateLimit fields; a refusal is 429 with Retry-After
// and a problem+json body.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
)

func main() {
	serve := flag.Bool("serve", false, "only serve, until interrupted")
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	if err := run(*serve, *addr, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(serveOnly bool, addr string, out io.Writer) error {
	perIP, err := keyed.New(func(string) (algorithms.Algorithm, error) {
		return algorithms.NewGCRA(algorithms.PerMinute(300), 5)
	}, keyed.WithMaxKeys(100_000))
	if err != nil {
		return err
	}
	defer perIP.Close()
	byIP, err := httplimit.KeyByIP() // behind a proxy: httplimit.TrustProxies("10.0.0.0/8")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	mux.HandleFunc("/report", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "a costly report") })
	cost := httplimit.WithCost(func(r *http.Request) int64 {
		if r.URL.Path == "/report" {
			return 3
		}
		return 1
	})
	srv := &http.Server{Handler: httplimit.Middleware(perIP, byIP, httplimit.WithPolicy("per-ip"), cost)(mux), ReadHeaderTimeout: 5 * time.Second}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	if serveOnly {
		fmt.Fprintln(out, "serving on", url)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		<-ctx.Done()
	} else {
		drive(url, out)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// drive sends requests until it is refused, waits what it is told, and
// sends one more.
func drive(url string, out io.Writer) {
	c := &http.Client{Timeout: 5 * time.Second}
	send := func(path string) *http.Response {
		resp, err := c.Get(url + path)
		if err != nil {
			fmt.Fprintln(out, "error:", err)
			return nil
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(out, "%-8s %d  RateLimit: %-20s Retry-After: %-2s %s\n", path, resp.StatusCode,
			resp.Header.Get("RateLimit"), resp.Header.Get("Retry-After"), strings.TrimSpace(string(body)))
		return resp
	}
	fmt.Fprintln(out, "RateLimit-Policy:", send("/").Header.Get("RateLimit-Policy"))
	for _, p := range []string{"/report", "/", "/"} {
		if resp := send(p); resp != nil && resp.StatusCode == http.StatusTooManyRequests {
			wait, _ := httplimit.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
			fmt.Fprintln(out, "waiting", wait)
			time.Sleep(wait)
			send(p)
		}
	}
}
