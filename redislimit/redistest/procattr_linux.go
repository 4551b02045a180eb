package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the server when the process that
// started it dies, so that a test binary killed by its -timeout leaves no
// server behind. (The signal follows the OS thread that started the
// server; Go ends a thread only when a goroutine locked to it exits, which
// the callers of this package do not do.)
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

const (
	sigStop = int(syscall.SIGSTOP)
	sigCont = int(syscall.SIGCONT)
)

func sendSignal(cmd *exec.Cmd, sig int) error { return cmd.Process.Signal(syscall.Signal(sig)) }
