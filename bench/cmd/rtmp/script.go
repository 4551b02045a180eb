package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

func scriptCost(c *redis.Client, script string) {
	ctx := context.Background()
	for name, sc := range map[string]string{"batch": script, "trivial": "return 1", "getset": "redis.call('GET', KEYS[1]); redis.call('SET', KEYS[1], '1', 'PX', 1000); return 1"} {
		sha := c.ScriptLoad(ctx, sc).Val()
		for _, n := range []int{1, 33, 128} {
			reqs := strings.TrimSuffix(strings.Repeat("1:-1,", n), ",")
			start := time.Now()
			const k = 3000
			for i := 0; i < k; i++ {
				if err := c.EvalSha(ctx, sha, []string{"sc" + name}, 1, 1000, 1000000, 0, 0, "", 0, 0, reqs).Err(); err != nil {
					panic(err)
				}
			}
			fmt.Printf("%-8s %3d costs: %v per call; %s\n", name, n, time.Since(start)/k, usecPerCall(c))
			c.ConfigResetStat(ctx)
		}
	}
	start := time.Now()
	for i := 0; i < 3000; i++ {
		c.Ping(ctx)
	}
	fmt.Println("ping", time.Since(start)/3000)
}

func usecPerCall(c *redis.Client) string {
	info := c.Info(context.Background(), "commandstats").Val()
	var out []string
	for _, l := range strings.Split(info, "\n") {
		if strings.HasPrefix(l, "cmdstat_evalsha") || strings.HasPrefix(l, "cmdstat_ping") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, " ")
}
