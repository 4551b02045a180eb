//go:build unix

package scenario

import (
	"syscall"
	"time"
)

// CPUTime returns the user and system time the process has used so far,
// or 0 where the platform cannot tell.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
