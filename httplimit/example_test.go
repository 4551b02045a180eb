package httplimit_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/keyed"
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
	// 200 OK "default";q=2;w=60 "default";r=0;t=60
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
