package testutil

import (
	"bytes"
	"runtime/pprof"
	"strings"
)

// GoroutineLabels returns the pprof label sets of the running goroutines
// as the goroutine profile prints them, `{"key":"value", ...}`, one per
// line: what a goroutine dump shows of an owner's name.
func GoroutineLabels() string {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	var out []string
	for _, line := range strings.Split(b.String(), "\n") {
		if s, ok := strings.CutPrefix(line, "# labels: "); ok {
			out = append(out, s)
		}
	}
	return strings.Join(out, "\n")
}
