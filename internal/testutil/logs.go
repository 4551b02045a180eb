package testutil

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
)

// Logs records what a *slog.Logger writes, as JSON lines, at every level
// from Debug up: the tests of the packages' log events (WithLogger) read
// the lines back as maps. Safe for concurrent use.
type Logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// NewLogs returns a Logs and a logger that writes to it.
func NewLogs() (*Logs, *slog.Logger) { return NewLogsAt(slog.LevelDebug) }

// NewLogsAt is NewLogs for a handler that takes the lines at level and
// above only.
func NewLogsAt(level slog.Level) (*Logs, *slog.Logger) {
	l := new(Logs)
	return l, slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: level}))
}

// Write is for the handler.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Lines returns the lines written so far, each decoded into a map (numbers
// are float64; durations are nanoseconds, as slog's JSON handler writes
// them).
func (l *Logs) Lines(t testing.TB) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []map[string]any
	dec := json.NewDecoder(bytes.NewReader(l.buf.Bytes()))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("a log line is not JSON: %v", err)
		}
		lines = append(lines, m)
	}
	return lines
}

// Messages returns the msg of every line written so far.
func (l *Logs) Messages(t testing.TB) []string {
	t.Helper()
	var msgs []string
	for _, m := range l.Lines(t) {
		s, _ := m[slog.MessageKey].(string)
		msgs = append(msgs, s)
	}
	return msgs
}
