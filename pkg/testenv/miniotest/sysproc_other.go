//go:build !linux

package miniotest

import "syscall"

// sysProcAttr has nothing to add outside Linux; a test binary that dies
// without running its cleanups may leave the server running there.
func sysProcAttr() *syscall.SysProcAttr { return nil }
