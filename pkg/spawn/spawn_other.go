//go:build !linux

package spawn

import "os/exec"

// Start starts cmd. Outside Linux there is no parent-death signal to keep
// and no per-thread nice value: nice is ignored.
func Start(cmd *exec.Cmd, nice int) error { return cmd.Start() }

// Threads is 0: no spawner threads here.
func Threads() int { return 0 }
