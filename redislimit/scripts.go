package redislimit

import (
	_ "embed" // the scripts

	"github.com/redis/go-redis/v9"
)

// The scripts the engine runs, each in its own file under lua/, whose top
// documents its KEYS, ARGV, the key's value and the reply: gcra.lua for a
// Limiter's or a Keyed's batch, lean.lua for a lone request with nothing
// to give back, window.lua for a Window. Each runs as a redis.Script:
// EVALSHA, then EVAL (which loads it again) where Redis answers NOSCRIPT,
// after a restart or SCRIPT FLUSH (callKeys).
var (
	//go:embed lua/gcra.lua
	gcraSource string
	//go:embed lua/lean.lua
	leanSource string
	//go:embed lua/window.lua
	windowSource string

	gcraScript   = redis.NewScript(gcraSource)
	leanScript   = redis.NewScript(leanSource)
	windowScript = redis.NewScript(windowSource)
)
