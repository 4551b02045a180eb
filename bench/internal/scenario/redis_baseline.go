package scenario

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/algorithms"
)

// baselineScript is GCRA for one decision per call, in integer µs: what a
// limiter without an owner, one script call per decision, does at best.
// KEYS[1] is the key, holding the TAT in µs; ARGV[1] the emission interval
// in µs, ARGV[2] tau (burst intervals) in µs, ARGV[3] the cost. It returns
// 0 when granted, else the wait in µs.
const baselineScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local nxt = tat + tonumber(ARGV[1]) * tonumber(ARGV[3])
local wait = nxt - tonumber(ARGV[2]) - now
if wait > 0 then return wait end
redis.call('SET', KEYS[1], string.format('%d', nxt), 'PX', math.ceil((nxt - now) / 1000))
return 0
`

type baseline struct {
	script        *redis.Script
	interval, tau string
}

// newBaseline rounds the emission interval up to a whole µs (at least 1).
func newBaseline(r algorithms.Rate, burst int64) *baseline {
	iv := max((int64(r.Per)/1000+r.Count-1)/r.Count, 1)
	return &baseline{script: redis.NewScript(baselineScript), interval: strconv.FormatInt(iv, 10), tau: strconv.FormatInt(iv*burst, 10)}
}

func (b *baseline) decide(ctx context.Context, c *redis.Client, key string) error {
	wait, err := b.script.Run(ctx, c, []string{key}, b.interval, b.tau, 1).Int64()
	if err != nil {
		return err
	}
	if wait != 0 {
		return fmt.Errorf("baseline refused: wait %d µs", wait)
	}
	return nil
}
