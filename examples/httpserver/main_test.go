package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The program drives its own server past the limit and back: a 429 with
// Retry-After, then a grant after waiting it (about a second of real time).
func TestRunDrivesTheServerPastItsLimit(t *testing.T) {
	var out strings.Builder
	if err := run(false, "127.0.0.1:0", &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`RateLimit-Policy: "per-ip";q=5;w=1`, "429", "Retry-After: 1", "quota-exceeded", "waiting 1s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), " 200 "); n != 4 {
		t.Errorf("%d grants, want 4:\n%s", n, out.String())
	}
}
