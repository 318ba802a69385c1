package miniotest

import "syscall"

// sysProcAttr asks the kernel to kill the server when the OS thread that
// started it exits. The Go runtime keeps its threads until the process ends
// (it only retires threads locked by runtime.LockOSThread), so in practice
// an aborted test binary (timeout panic, os.Exit, SIGKILL) takes its MinIO
// with it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
