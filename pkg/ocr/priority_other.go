//go:build !linux

package ocr

import "syscall"

func lowerPriority(pid, nice int) {}

func lowerThreadPriority(nice int) {}

// dieWithParent: there is no parent-death signal here.
func dieWithParent() *syscall.SysProcAttr { return nil }
