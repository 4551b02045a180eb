package main

import (
	"bytes"
	"io"
	"os"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The program paces its five requests 33.3ms apart, in virtual time.
func TestQuickstart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, w, _ := os.Pipe()
		stdout := os.Stdout
		os.Stdout = w
		main()
		os.Stdout = stdout
		w.Close()
		var out bytes.Buffer
		_, _ = io.Copy(&out, r)
		assert.Equal(t, "request 0 at +0s\nrequest 1 at +30ms\nrequest 2 at +70ms\nrequest 3 at +100ms\nrequest 4 at +130ms\n", out.String())
	})
}
