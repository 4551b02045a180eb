package redislimit

import (
	"fmt"

	"github.com/redis/go-redis/v9"
)

// readWindow reads a window script call's reply for s settlements and
// moves and n requests: their codes, in that order (lua/window.lua
// documents the reply).
func readWindow(c *redis.Cmd, s, n int) answer {
	res, err := c.Slice()
	if err != nil {
		return answer{err: err}
	}
	if len(res) != 4+s+n {
		return answer{err: fmt.Errorf("%w of %d values for %d settlements and moves and %d requests", errMalformed, len(res), s, n)}
	}
	a := answer{codes: make([]int64, s+n)}
	var ok [4]bool
	a.now, ok[0] = res[0].(int64)
	a.epoch, ok[1] = res[1].(int64)
	a.first, ok[2] = res[2].(int64)
	a.hold, ok[3] = res[3].(int64)
	if !ok[0] || !ok[1] || !ok[2] || !ok[3] {
		return answer{err: fmt.Errorf("%w %v", errMalformed, res[:4])}
	}
	for i, v := range res[4:] {
		x, ok := v.(int64)
		if !ok {
			return answer{err: fmt.Errorf("%w value %v", errMalformed, v)}
		}
		a.codes[i] = x
	}
	return a
}
