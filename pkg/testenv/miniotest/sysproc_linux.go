package miniotest

import "syscall"

// sysProcAttr asks the kernel to kill the server when the OS thread that
// started it exits. The Go runtime ends a thread only when a goroutine
// locked to it (runtime.LockOSThread) returns, and pkg/spawn starts the
// server on a thread that never does, so the server dies with the test
// binary (timeout panic, os.Exit, SIGKILL) and not before.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
