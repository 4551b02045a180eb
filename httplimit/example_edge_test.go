package httplimit_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
	"github.com/sluicehq/sluice/retry"
)

// status sends a GET to url with the header's lines and prints the status
// with the fields named.
func status(url string, fields []string, kv ...string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Add(kv[i], kv[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	fmt.Print(resp.StatusCode)
	for _, f := range fields {
		fmt.Printf(" %s=%s", f, resp.Header.Get(f))
	}
	fmt.Println()
}

func perKey(n int64) *keyed.Limiter[string] {
	l, err := keyed.New(func(string) (algorithms.Algorithm, error) { return algorithms.NewGCRA(algorithms.PerHour(n), n) })
	if err != nil {
		panic(err)
	}
	return l
}

var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello\n") })

// Shadow mode: a new limit of 1 per hour counts and tells, and the hook
// sees what it would refuse, but every request is served.
func ExampleWithShadow() {
	lim := perKey(1)
	defer lim.Close()
	byIP, _ := httplimit.KeyByIP()
	wouldRefuse := func(r *http.Request, d httplimit.Denial) {
		fmt.Println("would refuse", d.Key, "for", d.RetryAfter.Round(time.Minute))
	}
	srv := httptest.NewServer(httplimit.Middleware(lim, byIP, httplimit.WithShadow(wouldRefuse))(hello))
	defer srv.Close()
	status(srv.URL, []string{"RateLimit"})
	status(srv.URL, []string{"RateLimit"})
	// Output:
	// 200 RateLimit="default";r=0;t=3600
	// would refuse ip:127.0.0.1 for 1h0m0s
	// 200 RateLimit="default";r=0;t=3600
}

// Exemptions: the load balancer's health checks (its peer address) and a
// header an internal caller sets behind the gateway are never counted.
func ExampleExemptPeers() {
	lim := perKey(1)
	defer lim.Close()
	byIP, _ := httplimit.KeyByIP()
	fromLB, err := httplimit.ExemptPeers("127.0.0.0/8")
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(httplimit.Middleware(lim, byIP, httplimit.WithExemptions(fromLB))(hello))
	defer srv.Close()
	for range 3 {
		status(srv.URL, []string{"RateLimit"})
	}
	_, err = httplimit.ExemptPeers("the load balancer")
	fmt.Println(err)
	// Output:
	// 200 RateLimit=
	// 200 RateLimit=
	// 200 RateLimit=
	// httplimit: invalid configuration: trusted proxy "the load balancer" is neither a CIDR nor an address
}

// The X-RateLimit-* fields of GitHub and Twitter, beside the IETF ones.
func ExampleWithXRateLimitFields() {
	lim := perKey(2)
	defer lim.Close()
	byIP, _ := httplimit.KeyByIP()
	srv := httptest.NewServer(httplimit.Middleware(lim, byIP, httplimit.WithXRateLimitFields())(hello))
	defer srv.Close()
	for range 3 {
		resp, err := http.Get(srv.URL)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		reset, _ := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
		in := time.Until(time.Unix(reset, 0)).Round(time.Minute)
		fmt.Println(resp.StatusCode, resp.Header.Get("X-RateLimit-Limit"), resp.Header.Get("X-RateLimit-Remaining"), "reset in", in)
	}
	// Output:
	// 200 2 1 reset in 30m0s
	// 200 2 0 reset in 30m0s
	// 429 2 0 reset in 30m0s
}

// Composite keys: one quota per client and route, without joining strings
// by hand.
func ExampleKeyByAll() {
	lim := perKey(1)
	defer lim.Close()
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", hello)
	mux.Handle("GET /users/{id}", hello)
	byIP, _ := httplimit.KeyByIP()
	srv := httptest.NewServer(httplimit.Middleware(lim, httplimit.KeyByAll(byIP, httplimit.KeyByRoute(mux)))(mux))
	defer srv.Close()
	status(srv.URL+"/items/1", nil)
	status(srv.URL+"/items/2", nil) // the same route
	status(srv.URL+"/users/1", nil) // another route
	// Output:
	// 200
	// 429
	// 200
}

// The client retries a 529 of an overloaded API after its Retry-After,
// with a hook on each retry.
func ExampleWithOnRetry() {
	n := 0
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n++; n == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(529)
			return
		}
		_, _ = io.WriteString(w, "done\n")
	}))
	defer api.Close()
	tr, err := httplimit.NewTransport(permits.Unlimited,
		httplimit.WithAttemptTimeout(10*time.Second),
		httplimit.WithRetry(retry.WithMaxAttempts(3)),
		httplimit.WithOnRetry(func(attempt int, wait time.Duration, resp *http.Response, err error) {
			fmt.Println("attempt", attempt, "got", resp.StatusCode, "- retrying within", time.Second.String())
		}))
	if err != nil {
		panic(err)
	}
	resp, err := (&http.Client{Transport: tr}).Get(api.URL)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output:
	// attempt 1 got 529 - retrying within 1s
	// 200 done
}
