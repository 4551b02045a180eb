package httplimit_test

import (
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicehq/sluice/httplimit"
)

// t0 is the instant the responses of these tests are received at.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

const maxDuration = time.Duration(math.MaxInt64 / int64(time.Second) * int64(time.Second))

func TestParseWait(t *testing.T) {
	for _, c := range []struct {
		name string
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{"nothing", header(), 0, false},
		{"Retry-After seconds", header("Retry-After", "7"), 7 * time.Second, true},
		{"Retry-After date", header("Retry-After", t0.Add(90*time.Second).Format(http.TimeFormat)), 90 * time.Second, true},
		{"Retry-After date in the past: no wait", header("Retry-After", t0.Add(-time.Hour).Format(http.TimeFormat)), 0, true},
		{"Retry-After wins over a longer reset", header("Retry-After", "1", "X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", "6m0s"), time.Second, true},
		{"Retry-After huge saturates", header("Retry-After", "18446744073709551615"), maxDuration, true},
		{"Retry-After beyond 64 bits saturates", header("Retry-After", "99999999999999999999999"), maxDuration, true},
		{"Retry-After negative is ignored", header("Retry-After", "-5"), 0, false},
		{"Retry-After garbage falls back to the quotas", header("Retry-After", "soon", "X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "20ms"), 20 * time.Millisecond, true},
		{"RateLimit r=0", header("RateLimit", `"default";r=0;t=3`), 3 * time.Second, true},
		{"RateLimit r>0 asks nothing", header("RateLimit", `"default";r=5;t=3`), 0, false},
		{"RateLimit the longest exhausted", header("RateLimit", `"a";r=0;t=3, "b";r=0;t=9, "c";r=1;t=60`), 9 * time.Second, true},
		{"RateLimit without t: the policy's window", header("RateLimit", `"tokens";r=0`, "RateLimit-Policy", `"requests";q=10;w=1, "tokens";q=1000;w=60`), time.Minute, true},
		{"RateLimit without t nor policy", header("RateLimit", `"tokens";r=0`), 0, false},
		{"RateLimit malformed is ignored", header("RateLimit", `"default";r=-1;t=3`), 0, false},
		{"RateLimit huge t saturates", header("RateLimit", `"default";r=0;t=999999999999999`), maxDuration, true},
		{"RateLimit t beyond an Integer is malformed", header("RateLimit", `"default";r=0;t=9999999999999999`), 0, false},
		{"OpenAI requests", header("X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "1s"), time.Second, true},
		{"OpenAI tokens", header("X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", "6m0s"), 6 * time.Minute, true},
		{"OpenAI both, the longest", header("X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "20ms",
			"X-Ratelimit-Remaining-Tokens", "00", "X-Ratelimit-Reset-Tokens", "1.5s"), 1500 * time.Millisecond, true},
		{"remaining left: no wait", header("X-Ratelimit-Remaining-Tokens", "12", "X-Ratelimit-Reset-Tokens", "6m0s"), 0, false},
		{"remaining garbage", header("X-Ratelimit-Remaining-Tokens", "zero", "X-Ratelimit-Reset-Tokens", "1s"), 0, false},
		{"reset in seconds", header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "30"), 30 * time.Second, true},
		{"reset in decimal seconds", header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "0.25"), 250 * time.Millisecond, true},
		{"reset as a Unix time (GitHub)", header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", strconv.FormatInt(t0.Add(42*time.Second).Unix(), 10)), 42 * time.Second, true},
		{"reset as a Unix time past", header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", strconv.FormatInt(t0.Add(-time.Minute).Unix(), 10)), 0, true},
		{"reset as RFC 3339", header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", t0.Add(5*time.Second).Format(time.RFC3339)), 5 * time.Second, true},
		{"reset overflowing", header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "999999999999999999999999999"), maxDuration, true},
		{"reset overflowing duration", header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "9999999999h"), 0, false},
		{"reset negative", header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "-1s"), 0, false},
		{"reset garbage", header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "in a while"), 0, false},
		{"reset missing", header("X-Ratelimit-Remaining", "0"), 0, false},
		{"Anthropic", header("Anthropic-Ratelimit-Output-Tokens-Remaining", "0",
			"Anthropic-Ratelimit-Output-Tokens-Reset", t0.Add(12*time.Second).Format(time.RFC3339)), 12 * time.Second, true},
		{"lower case on the wire", http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {" 2s "}}, 2 * time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := httplimit.ParseWait(c.h, t0)
			assert.Equal(t, c.ok, ok)
			assert.Equal(t, c.want, got)
		})
	}
}

// Whatever the fields say, ParseWait returns, with a wait that is never
// negative, and reads a valid Retry-After exactly.
func FuzzParseWait(f *testing.F) {
	f.Add("120", `"default";r=0;t=3`, "0", "6m0s", "0", "2025-03-01T12:00:05Z")
	f.Add("Sat, 01 Mar 2025 12:01:00 GMT", `"a";r=0, "b";r=0;t=1`, "00", "1.5", "1", "")
	f.Add("-1", "garbage", "zero", "-3s", "0", "99999999999999999999")
	f.Add("", `"x";r=0;t=999999999999999`, "0", "1735689600", "0", ".5")
	f.Fuzz(func(t *testing.T, retryAfter, limit, remaining, reset, anthropicRemaining, anthropicReset string) {
		h := header("RateLimit", limit, "RateLimit-Policy", `"a";q=10;w=7`,
			"X-Ratelimit-Remaining-Tokens", remaining, "X-Ratelimit-Reset-Tokens", reset,
			"Anthropic-Ratelimit-Requests-Remaining", anthropicRemaining, "Anthropic-Ratelimit-Requests-Reset", anthropicReset)
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		d, ok := httplimit.ParseWait(h, t0)
		if d < 0 || !ok && d != 0 {
			t.Fatalf("ParseWait = %v, %v", d, ok)
		}
		if ra, valid := httplimit.ParseRetryAfter(retryAfter, t0); valid && (!ok || d != ra) {
			t.Fatalf("a valid Retry-After %q (%v) must win, got %v, %v", retryAfter, ra, d, ok)
		}
	})
}
