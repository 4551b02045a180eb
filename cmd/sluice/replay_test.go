package main

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayAnAccessLog: a gzip-compressed access log replays with its
// instants and keys, and a bad line fails the run naming it.
func TestReplayAnAccessLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := gzip.NewWriter(f)
	for i := range 30 {
		z.Write([]byte("10.0.0." + string(rune('1'+i%3)) + ` - - [01/Mar/2025:12:00:0` + string(rune('0'+i/10)) + ` +0000] "GET / HTTP/1.1" 200 1` + "\n"))
	}
	z.Close()
	f.Close()
	code, out, errs := sluice("simulate", "-limit", "sliding:10/s", "-traffic", "log:"+path, "-max-wait", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "30 arrivals in 3s from 2025-03-01T12:00:00Z, 3 keys") || column(t, out, "sliding:10/s", "admitted") != "30" {
		t.Errorf("the log's run:\n%s", out)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"ts\":1}\n{\"ts\":true}\n"), 0o600)
	if code, _, errs := sluice("simulate", "-limit", "gcra:1/s", "-traffic", "jsonl:"+bad+",time=ts"); code != 1 || !strings.Contains(errs, "bad.jsonl:2:") {
		t.Errorf("a bad line: exit %d, %q", code, errs)
	}
}
