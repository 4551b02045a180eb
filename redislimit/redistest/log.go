package redistest

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/redis/go-redis/v9"
)

// QuietLog replaces go-redis's logger, which writes every failed dial and
// every dropped connection to stderr, for a test binary whose tests kill,
// stop and restart servers on purpose: a passing run's log would be
// "connection refused" lines that read as failures. The lines are kept
// (the latest keptLines of them) and written to stderr by the function
// QuietLog returns, when the run it is given the exit code of failed, so
// that a failing run still shows what go-redis saw. It is meant for
// TestMain, as goleak's cleanup, which must exit:
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(m, goleak.Cleanup(redistest.QuietLog()))
//	}
func QuietLog() (exit func(code int)) {
	l := &keptLog{}
	redis.SetLogger(l)
	return func(code int) {
		if code != 0 {
			l.dump(os.Stderr)
		}
		os.Exit(code)
	}
}

// keptLines bounds the lines a quiet log keeps.
const keptLines = 1000

// keptLog is a go-redis logger that keeps its latest lines.
type keptLog struct {
	mu      sync.Mutex
	lines   []string
	dropped int
}

func (l *keptLog) Printf(_ context.Context, format string, v ...any) {
	line := fmt.Sprintf(format, v...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == keptLines {
		copy(l.lines, l.lines[1:])
		l.lines = l.lines[:keptLines-1]
		l.dropped++
	}
	l.lines = append(l.lines, line)
}

func (l *keptLog) dump(w io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return
	}
	fmt.Fprintf(w, "go-redis logged %d lines during the failed run (the last %d follow):\n", len(l.lines)+l.dropped, len(l.lines))
	for _, line := range l.lines {
		fmt.Fprintln(w, "go-redis:", line)
	}
}
