//go:build !unix

package scenario

import "time"

// CPUTime is 0 where getrusage is not available: CPU columns then read 0.
func CPUTime() time.Duration { return 0 }
