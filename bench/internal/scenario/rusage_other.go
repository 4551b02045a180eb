//go:build !unix

package scenario

import "time"

// cpuTime is 0 where getrusage is not available: CPU columns then read 0.
func cpuTime() time.Duration { return 0 }
