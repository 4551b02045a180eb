package redislimit_test

import (
	"context"
	_ "embed" // the baseline script
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/redislimit"
	"github.com/sluicehq/sluice/redislimit/redistest"
)

// BenchmarkWindowScriptCost measures the window script's time inside
// Redis (INFO commandstats, µs per EVALSHA) with n reservations held on
// a key of limit 10: another process's call (one TryAcquire, refused)
// and the holder's own (one TryAcquire and the 16 moves it sends with
// it), for the script as it was (walking every event held) and as it is.
// The script's cost must not grow with n (issue 26 item 6): medians of
// -count 5 are in docs/distributed.md.
func BenchmarkWindowScriptCost(b *testing.B) {
	s := redistest.Test(b)
	c := s.Client(b)
	for _, sc := range []struct {
		name string
		src  string
	}{{"before", windowBefore}, {"after", redislimit.WindowScript}} {
		b.Run(sc.name, func(b *testing.B) { scriptCost(b, c, redis.NewScript(sc.src)) })
	}
}

// windowBefore is the window script as it was before issue 26 item 6,
// which walked every event held: the baseline, measured in the same run.
//
//go:embed testdata/window_before.lua
var windowBefore string

func scriptCost(b *testing.B, c *redis.Client, script *redis.Script) {
	for _, n := range []int{100, 4000} {
		key := "cost:" + script.Hash()[:8] + ":" + strconv.Itoa(n)
		holdReservations(b, c, script, key, n)
		moves := make([]string, 16)
		for i := range moves {
			moves[i] = fmt.Sprintf("%d:%d", costT0, 11+i) // the earliest reservations
		}
		for _, call := range []struct{ name, moves string }{{"other", ""}, {"holder", strings.Join(moves, ",")}} {
			b.Run(fmt.Sprintf("held=%d/%s", n, call.name), func(b *testing.B) {
				args := []any{10, costW, costT0, "", "1:0", call.moves, 0}
				ctx := context.Background()
				sha := script.Hash()
				if err := c.ConfigResetStat(ctx).Err(); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if err := c.EvalSha(ctx, sha, []string{key}, args...).Err(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(usecPerCall(b, c, "evalsha"), "redis-µs/call")
			})
		}
	}
}

// The benchmark's window, 10 minutes in µs, and the instant it decides at.
const costW, costT0 = 600_000_000, 1_700_000_000_000_000

// holdReservations admits n requests of cost 1 on key at costT0, all but
// the first 10 reservations.
func holdReservations(b *testing.B, c *redis.Client, script *redis.Script, key string, n int) {
	ctx := context.Background()
	if err := script.Load(ctx, c).Err(); err != nil {
		b.Fatal(err)
	}
	for done := 0; done < n; done += 500 {
		reqs := strings.TrimSuffix(strings.Repeat("1:-1,", min(500, n-done)), ",")
		if err := script.EvalSha(ctx, c, []string{key}, 10, costW, costT0, "", reqs, "", 0).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// usecPerCall reads a command's usec_per_call from INFO commandstats.
func usecPerCall(b *testing.B, c *redis.Client, cmd string) float64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_"+cmd+":") {
			continue
		}
		for f := range strings.SplitSeq(strings.TrimSpace(line), ",") {
			if v, ok := strings.CutPrefix(f, "usec_per_call="); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				return x
			}
		}
	}
	b.Fatalf("no %s in commandstats", cmd)
	return 0
}
