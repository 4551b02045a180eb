package httplimit_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// A per-IP limit of 2 requests per minute on a real server, and what a
// client sees.
func ExampleMiddleware() {
	perIP, _ := keyed.New(func(string) (algorithms.Algorithm, error) { return algorithms.NewGCRA(algorithms.PerMinute(2), 2) })
	defer perIP.Close()
	byIP, _ := httplimit.KeyByIP()
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello\n") })
	srv := httptest.NewServer(httplimit.Middleware(perIP, byIP)(hello))
	defer srv.Close()

	for range 3 {
		resp, err := http.Get(srv.URL)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.Status, resp.Header.Get("RateLimit-Policy"), resp.Header.Get("RateLimit"))
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			fmt.Println("Retry-After:", ra)
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			fmt.Print(string(body))
		}
	}
	// Output:
	// 200 OK "default";q=2;w=60 "default";r=1;t=30
	// 200 OK "default";q=2;w=60 "default";r=0;t=30
	// 429 Too Many Requests "default";q=2;w=60 "default";r=0;t=30
	// Retry-After: 30
	// {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,"detail":"retry after 30 s","violated-policies":["default"]}
}

// A client reads the fields back.
func ExampleParseServiceLimits() {
	limits, err := httplimit.ParseServiceLimits(`"default";r=50;t=30`)
	if err != nil {
		panic(err)
	}
	fmt.Println(limits[0].Name, limits[0].Remaining, limits[0].Reset)
	// Output: default 50 30s
}

// A client of an LLM API: requests, tokens and requests at once in one
// limiter, each request's estimate acquired before it is sent and settled
// with the usage the API reports, and a 429 paused for and retried.
func ExampleTransport() {
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("X-Ratelimit-Remaining-Requests", "0")
			w.Header().Set("X-Ratelimit-Reset-Requests", "20ms")
			http.Error(w, "rate limited", http.StatusTooManyRequests)
			return
		}
		w.Header().Set("X-Usage-Tokens", "312")
		io.WriteString(w, `{"text":"hello"}`)
	}))
	defer api.Close()

	perRequest, _ := algorithms.NewGCRA(algorithms.PerMinute(500), 1) // (check the errors)
	perToken, _ := algorithms.NewSlidingWindow(algorithms.PerMinute(30_000))
	requests, tokens := actor.MustNew(perRequest), actor.MustNew(perToken)
	defer requests.Close()
	defer tokens.Close()
	inflight, _ := actor.NewPool(8)
	defer inflight.Close()
	lim := permits.All(permits.FixedCost(requests, 1), tokens, permits.FixedCost(inflight, 1))

	transport, err := httplimit.NewTransport(lim, httplimit.WithSettle(func(resp *http.Response) (int64, bool) {
		if resp.StatusCode == http.StatusTooManyRequests {
			return 0, true // refused: no tokens used
		}
		n, err := strconv.ParseInt(resp.Header.Get("X-Usage-Tokens"), 10, 64)
		return n, err == nil
	}))
	if err != nil {
		panic(err)
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}

	ctx := httplimit.ContextWithCost(context.Background(), 1_000) // the estimate: prompt + max_tokens
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, api.URL, strings.NewReader(`{"prompt":"hi","max_tokens":990}`))
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	st := transport.Stats()
	fmt.Println(resp.Status, string(body))
	fmt.Printf("attempts %d, 429s %d, pauses %d, settled %d\n", st.Attempts, st.Throttled, st.Pauses, st.Settled)
	// Output:
	// 200 OK {"text":"hello"}
	// attempts 2, 429s 1, pauses 1, settled 2
}
