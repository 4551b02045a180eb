package httplimit

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/permits"
)

// run serves r with next while it holds pm of rp, and reports the
// outcome when next returns, or panics (the panic goes on).
func run(w http.ResponseWriter, r *http.Request, next http.Handler, rp *routePool, pm permits.Permit) {
	sw := &statusWriter{ResponseWriter: w}
	start := time.Now()
	o := actor.Dropped // a panic: a handler's bug, not the route's load
	defer func() {
		if o == actor.Success {
			rp.Observe(time.Since(start))
		}
		rp.Pool.Done(pm, o)
	}()
	next.ServeHTTP(sw, r)
	o = outcome(r.Context(), sw.code)
}

// outcome is what a handler's response says of its route's load:
//   - a client that went away (its context cancelled): Dropped, nothing;
//   - its context's deadline past, or 504: Timeout;
//   - 503 or 429, the handler's own refusals: Overload;
//   - another 5xx: Dropped, since a bug's fast 500s would otherwise teach
//     the controller that the route answers in no time, and count as
//     overload it is not;
//   - anything else, 4xx included: Success, with its latency.
func outcome(ctx context.Context, code int) actor.Outcome {
	switch err := ctx.Err(); {
	case errors.Is(err, context.DeadlineExceeded):
		return actor.Timeout
	case err != nil:
		return actor.Dropped
	}
	switch {
	case code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests:
		return actor.Overload
	case code == http.StatusGatewayTimeout:
		return actor.Timeout
	case code >= 500:
		return actor.Dropped
	}
	return actor.Success
}

// statusWriter records the status a handler writes (200 if it writes
// none). Unwrap lets http.ResponseController reach the writer beneath;
// Flush and Hijack are passed on for handlers that assert them.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code // a 1xx is not the response's status
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Flush() {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}
