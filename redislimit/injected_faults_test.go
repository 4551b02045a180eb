package redislimit_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/redislimit/redistest"
)

// The shared bound through the faults a network has (issue 26, item 1):
// the test binary runs itself four times as children (faultsChildEnv
// set), each with a default go-redis client (MaxRetries 3) going through
// its own fault proxy, which drops script calls, cuts their replies after
// Redis ran them, and holds replies, some past the call timeout. Each
// child runs a GCRA and a Window, each on a key the four share, with
// callers that Acquire and give up (their reservations go back to Redis),
// callers that TryAcquire, and a caller that gives grants back (Refund,
// Settle: the calls that change Redis twice if run twice), until its
// proxy has injected faultsPerChild faults. Each child prints the units
// every grant used, at the instant Redis admitted it, and its proxy's
// counts; the parent checks the GCRA's bound over every window and in
// total by Redis TIME, the Window's limit over every window, and that
// the four injected at least faultsAtLeast faults. That every call ends
// is checked by each child (its callers end within faultsCallsEnd of
// the run's end, and goleak finds nothing left when it exits).
const (
	faultsProcs    = 4
	faultsAtLeast  = 1000
	faultsPerChild = faultsAtLeast/faultsProcs + 10
	faultsChildEnv = "REDISLIMIT_FAULTS_CHILD"
	faultsSeedEnv  = "REDISLIMIT_FAULTS_SEED"
	// faultsCallsEnd bounds how long the callers of a child take to end
	// once its run is over: each call is bounded by the call timeout
	// (faultsCallTimeout), a hundred times shorter.
	faultsCallsEnd = 30 * time.Second
	// faultsChildLimit ends a child that hangs all the same, so that the
	// test fails rather than waits for go test's timeout.
	faultsChildLimit = 5 * time.Minute

	gcraPerSec, gcraBurst = 200, 10
	winLimit, winPer      = 40, 200 * time.Millisecond
)

func TestTheSharedBoundHoldsThroughInjectedFaults(t *testing.T) {
	if addr := os.Getenv(faultsChildEnv); addr != "" {
		faultsChild(t, addr)
		return
	}
	s := redistest.Test(t)
	c := s.Client(t)
	ctx := context.Background()
	t0, err := c.Time(ctx).Result()
	require.NoError(t, err)
	outs := runFaultChildren(t, s.Addr)
	t1, err := c.Time(ctx).Result()
	require.NoError(t, err)

	var run faultRun
	for i, out := range outs {
		require.NoError(t, run.parse(out), "child %d", i)
	}
	t.Logf("faults injected: %d replies cut after the command ran, %d commands dropped, %d replies delayed: %d in all (per process %v)",
		run.faults.Cut, run.faults.Dropped, run.faults.Delayed, run.faults.Total(), run.perChild)
	for _, line := range run.stats {
		t.Log(line)
	}
	assert.GreaterOrEqual(t, run.faults.Total(), faultsAtLeast, "faults injected across the run")
	checkGCRABound(t, run.gcra, t1.Sub(t0))
	checkWindowLimit(t, run.window)
}

// runFaultChildren runs the children against the server at addr and
// returns what each printed.
func runFaultChildren(t *testing.T, addr string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), faultsChildLimit)
	defer cancel()
	cmds := make([]*exec.Cmd, faultsProcs)
	outs := make([]strings.Builder, faultsProcs)
	for i := range cmds {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTheSharedBoundHoldsThroughInjectedFaults$", "-test.count=1")
		cmd.Env = append(os.Environ(), faultsChildEnv+"="+addr, faultsSeedEnv+"="+strconv.Itoa(i))
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		require.NoError(t, cmd.Start())
		cmds[i] = cmd
	}
	texts := make([]string, faultsProcs)
	for i, cmd := range cmds {
		err := cmd.Wait()
		texts[i] = outs[i].String()
		require.NoError(t, err, "child %d (killed: it hung past %v):\n%s", i, faultsChildLimit, texts[i])
	}
	return texts
}

// spent is a grant's use of a limit: units at the instant Redis admitted
// them, in µs.
// who says whose it was: the process, and which of its callers.
type spent struct {
	at, units int64
	who       string
}

// faultRun is what the children printed, merged.
type faultRun struct {
	gcra, window []spent
	faults       redistest.Faults
	perChild     []int
	stats        []string
}

// parse reads a child's lines: "G at units" and "W at units" for the
// units a grant of the GCRA or the Window used, "F cut dropped delayed"
// for its proxy's counts, "S ..." for a line of its limiters' stats.
func (r *faultRun) parse(out string) error {
	sc := bufio.NewScanner(strings.NewReader(out))
	seen := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "S":
			r.stats = append(r.stats, sc.Text())
		case (f[0] == "G" || f[0] == "W") && len(f) == 4:
			u, err := parseUse(f[1], f[2], f[3])
			if err != nil {
				return err
			}
			if f[0] == "G" {
				r.gcra = append(r.gcra, u)
			} else {
				r.window = append(r.window, u)
			}
		case f[0] == "F" && len(f) == 4:
			var n [3]int
			for i := range n {
				v, err := strconv.Atoi(f[1+i])
				if err != nil {
					return err
				}
				n[i] = v
			}
			r.faults.Cut += n[0]
			r.faults.Dropped += n[1]
			r.faults.Delayed += n[2]
			r.perChild = append(r.perChild, n[0]+n[1]+n[2])
			seen = true
		}
	}
	if !seen {
		return fmt.Errorf("no fault counts in:\n%s", out)
	}
	return sc.Err()
}

func parseUse(at, units, who string) (spent, error) {
	a, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return spent{}, err
	}
	u, err := strconv.ParseInt(units, 10, 64)
	return spent{a, u, who}, err
}

// checkGCRABound checks the GCRA's grants: within burst + rate·d in every
// window [grants[i], grants[j]] (Redis admits at exact instants and
// reports them rounded up to the µs, so the exact window is less than a µs
// longer than the one measured), and in total within burst +
// rate·elapsed by Redis TIME.
func checkGCRABound(t *testing.T, grants []spent, elapsed time.Duration) {
	require.NotEmpty(t, grants)
	sort.Slice(grants, func(i, j int) bool { return grants[i].at < grants[j].at })
	excess, worst, total := 0, 0.0, int64(0)
	for i := range grants {
		var sum int64
		for j := i; j < len(grants); j++ {
			sum += grants[j].units
			bound := gcraBurst + (grants[j].at-grants[i].at+1)*gcraPerSec/1_000_000
			if sum > bound {
				excess++
			}
			worst = max(worst, float64(sum)/float64(bound))
		}
		total += grants[i].units
	}
	bound := gcraBurst + int64(elapsed)*gcraPerSec/int64(time.Second)
	t.Logf("GCRA %d/s, burst %d: %d units used over %v of Redis TIME (bound %d); windows above the bound: %d; fullest window %.4f of its bound",
		gcraPerSec, gcraBurst, total, elapsed.Round(time.Millisecond), bound, excess, worst)
	assert.Zero(t, excess, "no window above burst + rate·d")
	assert.LessOrEqual(t, total, bound, "used ≤ burst + rate·elapsed")
}

// checkWindowLimit checks the Window's grants: the units used in every
// window (at-winPer, at] at most the limit. It logs the grants of the
// fullest window, where they came from.
func checkWindowLimit(t *testing.T, grants []spent) {
	require.NotEmpty(t, grants)
	sort.Slice(grants, func(i, j int) bool { return grants[i].at < grants[j].at })
	var worst, sum, total int64
	j, from, to := 0, 0, 0
	for i := range grants {
		sum += grants[i].units
		for grants[i].at-grants[j].at >= winPer.Microseconds() {
			sum -= grants[j].units
			j++
		}
		if sum > worst {
			worst, from, to = sum, j, i
		}
		total += grants[i].units
	}
	t.Logf("Window %d per %v: %d units used; most in one window: %d", winLimit, winPer, total, worst)
	if !assert.LessOrEqual(t, worst, int64(winLimit), "no window holds more than the limit") {
		for _, g := range grants[from : to+1] {
			t.Logf("  at %d µs: %d units, %s", g.at, g.units, g.who)
		}
	}
}
