package testutil_test

import (
	"context"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testutil"
)

func TestGoroutineLabels(t *testing.T) {
	done, started := make(chan struct{}), make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		pprof.Do(context.Background(), pprof.Labels("sluice.test", "labelled"), func(context.Context) {
			close(started)
			<-done
		})
	}()
	<-started
	got := testutil.GoroutineLabels()
	close(done)
	<-finished
	if !strings.Contains(got, `"sluice.test":"labelled"`) {
		t.Fatalf("labels %q", got)
	}
}
