package redislimit_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/algorithms"
	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// The shared bound, across processes: the test binary runs itself four
// times as children (REDISLIMIT_CHILD set), each with 16 goroutines
// calling Acquire in a loop on one key for a while; each child prints the
// instant Redis admitted each of its grants at. The parent checks the
// bound over every window of the merged grants, and the total against
// elapsed time read from Redis TIME.
const (
	sharedProcs    = 4
	sharedCallers  = 16
	sharedRun      = 1500 * time.Millisecond
	sharedBurst    = 50
	sharedPerSec   = 1000
	sharedChildEnv = "REDISLIMIT_CHILD"
)

func TestSharedBoundAcrossProcesses(t *testing.T) {
	if os.Getenv(sharedChildEnv) != "" {
		sharedChild(t)
		return
	}
	s := redistest.Test(t)
	c := s.Client(t)
	ctx := context.Background()
	t0, err := c.Time(ctx).Result()
	require.NoError(t, err)

	type child struct {
		cmd *exec.Cmd
		out strings.Builder
	}
	children := make([]*child, sharedProcs)
	for i := range children {
		ch := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestSharedBoundAcrossProcesses$", "-test.count=1")}
		ch.cmd.Env = append(os.Environ(), sharedChildEnv+"="+s.Addr)
		ch.cmd.Stdout = &ch.out
		ch.cmd.Stderr = &ch.out
		require.NoError(t, ch.cmd.Start())
		children[i] = ch
	}
	type grant struct{ at, cost int64 }
	var grants []grant
	perChild := make([]int, sharedProcs)
	for i, ch := range children {
		err := ch.cmd.Wait()
		require.NoError(t, err, "child %d:\n%s", i, ch.out.String())
		sc := bufio.NewScanner(strings.NewReader(ch.out.String()))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 3 && f[0] == "GRANT" {
				at, err1 := strconv.ParseInt(f[1], 10, 64)
				cost, err2 := strconv.ParseInt(f[2], 10, 64)
				require.NoError(t, err1)
				require.NoError(t, err2)
				grants = append(grants, grant{at, cost})
				perChild[i]++
			}
		}
	}
	t1, err := c.Time(ctx).Result()
	require.NoError(t, err)
	require.NotEmpty(t, grants)

	sort.Slice(grants, func(i, j int) bool { return grants[i].at < grants[j].at })
	// Every window [grants[i], grants[j]]: Redis admits at exact instants
	// and reports them rounded up to the µs, so the exact window is less
	// than a µs longer than the one measured.
	worst, excess := 0.0, 0
	for i := range grants {
		var sum int64
		for j := i; j < len(grants); j++ {
			sum += grants[j].cost
			d := grants[j].at - grants[i].at + 1
			bound := sharedBurst + d*sharedPerSec/1_000_000
			if sum > bound {
				excess++
			}
			if u := float64(sum) / float64(bound); u > worst {
				worst = u
			}
		}
	}
	elapsed := t1.Sub(t0)
	total := int64(len(grants))
	bound := sharedBurst + int64(elapsed)*sharedPerSec/int64(time.Second)
	span := time.Duration(grants[len(grants)-1].at-grants[0].at) * time.Microsecond
	t.Logf("%d processes × %d callers at %d/s, burst %d: admitted %d (per process %v) over %v of Redis TIME (bound %d); grants span %v; windows above the bound: %d; fullest window %.4f of its bound",
		sharedProcs, sharedCallers, sharedPerSec, sharedBurst, total, perChild, elapsed.Round(time.Millisecond), bound, span.Round(time.Millisecond), excess, worst)
	assert.Zero(t, excess, "no window above burst + rate·d")
	assert.LessOrEqual(t, total, bound, "admitted ≤ burst + rate·elapsed")
	// How much of the quota the processes used depends on how fast this
	// machine ran them (bench/ measures it); that each got grants does not.
	t.Logf("the processes used %.0f%% of the quota over the grants' span", 100*float64(total)/(float64(sharedPerSec)*span.Seconds()))
	for i, n := range perChild {
		assert.Positive(t, n, "process %d got grants", i)
	}
}

// sharedChild is one process of TestSharedBoundAcrossProcesses.
func sharedChild(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: os.Getenv(sharedChildEnv)})
	defer c.Close()
	var mu sync.Mutex
	var lines []string
	l, err := redislimit.New(c, "shared", algorithms.PerSecond(sharedPerSec), sharedBurst,
		redislimit.WithGrantHook(func(at, cost int64) {
			mu.Lock()
			lines = append(lines, fmt.Sprintf("GRANT %d %d", at, cost))
			mu.Unlock()
		}))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), sharedRun)
	defer cancel()
	var wg sync.WaitGroup
	for range sharedCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, err := l.Acquire(ctx, 1)
				switch {
				case err == nil:
				case errors.Is(err, context.DeadlineExceeded):
					return // refused at once: the run ends before its reservation
				case ctx.Err() == nil:
					t.Errorf("Acquire: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, l.Close())
	mu.Lock()
	defer mu.Unlock()
	fmt.Println(strings.Join(lines, "\n"))
}
