//go:build !linux

package redistest

import "os/exec"

// dieWithParent does nothing where the kernel offers no parent-death
// signal: a server outlives a test binary that is killed.
func dieWithParent(*exec.Cmd) {}
