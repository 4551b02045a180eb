package redislimit_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/httplimit"
	"github.com/sluicehq/sluice/redislimit"
)

// A fleet behind a load balancer shares one limit per client: each server
// has its own Keyed on the same Redis, and httplimit.Middleware sends the
// RateLimit fields of the shared count, whichever server answers.
func ExampleKeyed_httplimit() {
	client, stop, err := throwaway() // a redis-server on loopback
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	byAPIKey := httplimit.KeyByAPIKey(nil) // behind a gateway that checks the keys
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })
	var fleet []*httptest.Server
	for range 2 {
		lim, _ := redislimit.NewKeyed(client, "api:", algorithms.PerHour(3), 3)
		defer lim.Close()
		srv := httptest.NewServer(httplimit.Middleware(lim, byAPIKey)(hello))
		defer srv.Close()
		fleet = append(fleet, srv)
	}

	for i := range 4 {
		req, _ := http.NewRequest(http.MethodGet, fleet[i%2].URL, nil)
		req.Header.Set("X-API-Key", "alice")
		resp, err := fleet[i%2].Client().Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println("server", i%2, resp.StatusCode, resp.Header.Get("RateLimit-Policy"), resp.Header.Get("RateLimit"))
	}
	// Output:
	// server 0 200 "default";q=3;w=3600 "default";r=2;t=1200
	// server 1 200 "default";q=3;w=3600 "default";r=1;t=1200
	// server 0 200 "default";q=3;w=3600 "default";r=0;t=1200
	// server 1 429 "default";q=3;w=3600 "default";r=0;t=1200
}
