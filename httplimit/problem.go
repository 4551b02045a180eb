package httplimit

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/keyed"
	"github.com/sluicehq/sluice/permits"
)

// Problem is an RFC 9457 problem details object, the body the middleware
// writes for the requests it does not pass on.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// ViolatedPolicies names the policies a refused request exceeded, as
	// the draft's quota-exceeded problem type defines.
	ViolatedPolicies []string `json:"violated-policies,omitempty"`
}

// QuotaExceeded is the problem type of draft-ietf-httpapi-ratelimit-headers
// for a request refused by a quota.
const QuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// WriteProblem writes p as application/problem+json with p.Status.
func WriteProblem(w http.ResponseWriter, p Problem) {
	body, err := json.Marshal(p)
	if err != nil { // a Problem always marshals; this is for the reader
		http.Error(w, p.Title, p.Status)
		return
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(body, '\n'))
}

// Denial is what the middleware knows of a request the limit refused. The
// RateLimit and Retry-After fields are already set on the response when a
// handler given to WithDeniedHandler sees it.
type Denial struct {
	Key        string
	Policy     string
	Quota      permits.Quota // Remaining is -1 when the limiter did not say
	RetryAfter time.Duration
	Err        error // the limiter's error: it matches permits.ErrRateLimited
}

// deny is the default denied handler: 429 and a quota-exceeded problem.
func deny(w http.ResponseWriter, _ *http.Request, d Denial) {
	WriteProblem(w, Problem{
		Type:             QuotaExceeded,
		Title:            "Request cannot be satisfied as assigned quota has been exceeded",
		Status:           http.StatusTooManyRequests,
		Detail:           fmt.Sprintf("retry after %d s", Seconds(d.RetryAfter)),
		ViolatedPolicies: []string{d.Policy},
	})
}

// fail is the default error handler: a problem whose status says whose
// fault it is.
func fail(w http.ResponseWriter, _ *http.Request, err error) {
	p := Problem{Type: "about:blank", Detail: err.Error()}
	switch {
	case errors.Is(err, ErrNoKey):
		p.Status = http.StatusBadRequest
	case errors.Is(err, permits.ErrCostExceedsCapacity):
		p.Status = http.StatusRequestEntityTooLarge // no wait makes it fit
	case errors.Is(err, keyed.ErrTooManyKeys), errors.Is(err, permits.ErrClosed):
		p.Status = http.StatusServiceUnavailable
	default:
		p.Status = http.StatusInternalServerError
	}
	p.Title = http.StatusText(p.Status)
	WriteProblem(w, p)
}
