package testutil

import (
	"fmt"
	"runtime/debug"
	"testing"
	"time"
)

// Within runs fn and fails t if fn panics, or if it has not returned
// after d: for tests of hostile input, whose promise is a clear answer,
// never a panic or a hang. A call that hangs is left running; the test
// fails at once.
func Within(t testing.TB, d time.Duration, name string, fn func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Sprintf("panic: %v\n%s", r, debug.Stack())
				return
			}
			done <- nil
		}()
		fn()
	}()
	select {
	case r := <-done:
		if r != nil {
			t.Errorf("%s: %v", name, r)
		}
	case <-time.After(d):
		t.Fatalf("%s: hung for %v", name, d)
	}
}
