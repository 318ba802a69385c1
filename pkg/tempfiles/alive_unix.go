//go:build unix

package tempfiles

import (
	"errors"
	"syscall"
)

// alive reports whether a process with this id exists (one that belongs
// to another user counts).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
