//go:build !linux

package redistest

import "os/exec"

// dieWithParent does nothing where the kernel offers no parent-death
// signal: a server outlives a test binary that is killed.
func dieWithParent(*exec.Cmd) {}

const (
	sigStop = 19 // SIGSTOP and SIGCONT where they exist; unused elsewhere
	sigCont = 18
)

// sendSignal is unsupported where the kernel has no SIGSTOP: Stop and
// Continue do nothing there.
func sendSignal(*exec.Cmd, int) error { return nil }
