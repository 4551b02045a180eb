package testutil

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps what Errorf reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestWithinReportsAPanicAndNothingElse(t *testing.T) {
	r := &recorder{TB: t}
	Within(r, time.Minute, "calm", func() {})
	if len(r.errs) != 0 {
		t.Fatalf("a call that returns reported %q", r.errs)
	}
	Within(r, time.Minute, "hostile", func() { panic("boom") })
	if len(r.errs) != 1 || !strings.HasPrefix(r.errs[0], "hostile: panic: boom") {
		t.Fatalf("a panic reported as %q", r.errs)
	}
}
