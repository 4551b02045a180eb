package traffic_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/traffic"
)

// files serves in-memory files to a Plan.
func files(m map[string]string) traffic.Opener {
	return func(path string) (io.ReadCloser, error) {
		s, ok := m[path]
		if !ok {
			return nil, errors.New("no file " + path)
		}
		return io.NopCloser(strings.NewReader(s)), nil
	}
}

func replay(t *testing.T, spec string, m map[string]string) ([]traffic.Arrival, traffic.Summary, error) {
	t.Helper()
	p, err := traffic.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	f, err := traffic.Plan{Patterns: []traffic.Pattern{p}, Files: files(m)}.Open()
	if err != nil {
		return nil, traffic.Summary{}, err
	}
	defer f.Close()
	a, err := traffic.Collect(f)
	return a, f.Summary(), err
}

const accessLog = `10.0.0.1 - - [01/Mar/2025:12:00:00 +0000] "GET / HTTP/1.1" 200 512
10.0.0.2 - alice [01/Mar/2025:12:00:00 +0000] "GET /a HTTP/1.1" 200 1 "-" "curl/8"

10.0.0.1 - - [01/Mar/2025:13:00:01 +0100] "POST /b HTTP/1.1" 429 0 "https://x" "agent"
`

// TestAccessLog: a Common or Combined Log Format line is one arrival at
// its timestamp (zones honoured), keyed by the client's address.
func TestAccessLog(t *testing.T) {
	a, s, err := replay(t, "log:access.log", map[string]string{"access.log": accessLog})
	if err != nil {
		t.Fatal(err)
	}
	want := []traffic.Arrival{{At: 0, Cost: 1, Key: 1}, {At: 0, Cost: 1, Key: 2}, {At: time.Second, Cost: 1, Key: 1}}
	if !equal(a, want) || s.Keys[1] != "10.0.0.1" || s.Keys[2] != "10.0.0.2" {
		t.Errorf("got %v keys %v, want %v", a, s.Keys, want)
	}
	if !s.Origin.Equal(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)) || s.Duration != 2*time.Second {
		t.Errorf("origin %v, duration %v", s.Origin, s.Duration)
	}
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write([]byte(accessLog))
	w.Close()
	if b, _, err := replay(t, "log:access.log.gz,key=user", map[string]string{"access.log.gz": z.String()}); err != nil || len(b) != 3 {
		t.Errorf("gzip: %v, %v", b, err)
	}
}

// TestJSONLines: time, key and cost come from the fields named.
func TestJSONLines(t *testing.T) {
	in := `{"ts":"2025-03-01T12:00:00.5Z","client":"a","tokens":300}
{"ts":1740830400,"client":7,"tokens":20}
`
	a, s, err := replay(t, "jsonl:calls.jsonl,time=ts,key=client,cost=tokens", map[string]string{"calls.jsonl": in})
	if err != nil {
		t.Fatal(err)
	}
	want := []traffic.Arrival{{At: 0, Cost: 20, Key: 2}, {At: 500 * time.Millisecond, Cost: 300, Key: 1}}
	if !equal(a, want) || s.Keys[2] != "7" {
		t.Errorf("got %v keys %v, want %v", a, s.Keys, want)
	}
}

// TestReplayErrorsNameTheLine: what cannot be read is an error naming the
// file and the line.
func TestReplayErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ spec, in, says string }{
		{"log:x", "10.0.0.1 - - [01/Mar/2025:12:00:00 +0000] \"GET /\" 200 1\nnot a log line\n", "x:2: no [timestamp]"},
		{"log:x", "h - -\n", "x:1: not a Common Log Format line"},
		{"log:x", "h - - 01/Mar/2025 \"GET /\" 200 1\n", "x:1: no [timestamp]"},
		{"log:x", "h - - [2025-03-01T12:00:00Z] \"GET /\" 200 1\n", "x:1: timestamp [2025-03-01T12:00:00Z] is not like"},
		{"jsonl:x,time=ts", "{\"ts\":\"2025-03-01T12:00:00Z\"}\n[1]\n", "x:2: not a JSON object"},
		{"jsonl:x,time=ts", "{\"at\":1}\n", "x:1: no field \"ts\""},
		{"jsonl:x,time=ts,cost=n", "{\"ts\":1,\"n\":0}\n", "x:1: field \"n\" is 0"},
		{"jsonl:x,time=ts", "{\"ts\":\"soon\"}\n", "x:1: field \"ts\": \"soon\" is not an RFC 3339"},
		{"jsonl:x,time=ts", "{\"ts\":" + strings.Repeat("1", 2<<20) + "}\n", "x:1: a line longer than"},
	} {
		_, _, err := replay(t, tc.spec, map[string]string{"x": tc.in})
		if err == nil || !errors.Is(err, traffic.ErrInvalid) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s %.40q: %v, want %q", tc.spec, tc.in, err, tc.says)
		}
	}
	for _, s := range []string{"jsonl:x", "log:x,key=ip", "log:x,cost=n", "csv:x,time=ts"} {
		if _, err := traffic.Parse(s); !errors.Is(err, traffic.ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid", s, err)
		}
	}
}
