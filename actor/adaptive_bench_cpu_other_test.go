//go:build !unix

package actor_test

import "time"

// cpuTime is 0 where the platform cannot tell: cpu-ns/op reads 0.
func cpuTime() time.Duration { return 0 }
