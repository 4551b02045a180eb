package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/sluicehq/sluice/actor"
	"github.com/sluicehq/sluice/httplimit"
)

// A route whose pool allows one request at a time (a limit held at 1, for
// the example) sheds the second while the first is served.
func ExampleShedder() {
	mux := http.NewServeMux()
	entered, release := make(chan struct{}), make(chan struct{})
	mux.HandleFunc("GET /report", func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
		fmt.Fprintln(w, "done")
	})
	shed, err := httplimit.NewShedder(httplimit.KeyByRoute(mux), func() actor.Controller { return &actor.AIMD{} },
		httplimit.WithPoolOptions(actor.WithLimits(1, 1, 1)))
	if err != nil {
		panic(err)
	}
	defer shed.Close()
	h := shed.Handler(mux)

	first := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(first, httptest.NewRequest(http.MethodGet, "/report", nil))
	}()
	<-entered
	second := httptest.NewRecorder()
	h.ServeHTTP(second, httptest.NewRequest(http.MethodGet, "/report", nil))
	fmt.Println(second.Code, second.Header().Get("Retry-After"), second.Header().Get("Content-Type"))
	close(release)
	<-done
	fmt.Println(first.Code)
	// Output:
	// 503 1 application/problem+json
	// 200
}
