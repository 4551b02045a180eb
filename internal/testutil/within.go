package testutil

import (
	"fmt"
	"runtime/debug"
	"testing"
	"time"
)

// Within runs fn on the calling goroutine and fails t if fn panics, and
// ends the test binary if fn has not returned after d: for tests of
// hostile input, whose promise is a clear answer, never a panic or a hang.
// A hang cannot be interrupted, so it is reported as the panic of a timer
// that fn's return stops, naming the call, instead of waiting for go
// test's -timeout; fn runs on no goroutine of its own that could outlive
// the test.
func Within(t testing.TB, d time.Duration, name string, fn func()) {
	t.Helper()
	hung := time.AfterFunc(d, func() { panic(fmt.Sprintf("%s: hung for %v", name, d)) })
	defer hung.Stop()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: panic: %v\n%s", name, r, debug.Stack())
		}
	}()
	fn()
}
