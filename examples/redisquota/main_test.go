package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/redislimit/redistest"
)

func TestMain(m *testing.M) {
	// The test binary is also the workers' binary: run as one when asked.
	if len(os.Args) > 1 && (os.Args[1] == "-worker" || os.Args[1] == "-api-worker") {
		main()
		return
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(redistest.QuietLog()))
}

func TestThreeWorkersShareOneQuota(t *testing.T) {
	s := redistest.Test(t)
	var out strings.Builder
	if err := run(&out, s.Addr, 3, time.Second); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want three workers and a total, got:\n%s", out.String())
	}
	sum := 0
	for i, l := range lines[:3] {
		m := regexp.MustCompile(`^worker (\d): (\d+) permits$`).FindStringSubmatch(l)
		if m == nil || m[1] != strconv.Itoa(i+1) {
			t.Fatalf("line %q", l)
		}
		n, _ := strconv.Atoi(m[2])
		if n == 0 {
			t.Errorf("worker %d got nothing", i+1)
		}
		sum += n
	}
	m := regexp.MustCompile(`^total: (\d+) permits in .* allows at most (\d+)$`).FindStringSubmatch(lines[3])
	if m == nil {
		t.Fatalf("line %q", lines[3])
	}
	total, _ := strconv.Atoi(m[1])
	bound, _ := strconv.Atoi(m[2])
	// Within the bound at any speed; how close to it a busy machine comes
	// is for the log, not the test.
	if total != sum || total > bound {
		t.Errorf("total %d (sum %d), bound %d: want the sum, within the bound", total, sum, bound)
	}
}
