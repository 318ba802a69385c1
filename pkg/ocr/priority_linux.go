//go:build linux

package ocr

import "syscall"

// lowerPriority sets the nice value of an OCR process (best effort: a
// process that has already exited, or a value it may not take, is left as
// it is). Nice, not SCHED_IDLE: measured side by side, SCHED_IDLE kept
// search latency no better (FTS p95 during OCR 0.96-1.09 of before/after,
// nice 10 0.87-1.08), and it would starve OCR on a machine that is never
// idle, where nice 10 still gets its share.
func lowerPriority(pid, nice int) {
	if nice > 0 {
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, pid, nice)
	}
}

// dieWithParent makes a program started with it receive SIGKILL when the
// thread that started it ends (the process dying ends them all): start it
// with pkg/spawn, whose threads end only with the process.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// lowerThreadPriority sets the nice value of the calling OS thread only
// (Linux schedules threads, and setpriority takes a thread id). The caller
// must hold the thread (runtime.LockOSThread) and never give it back, so
// that the thread ends with its goroutine instead of running others at the
// lower priority.
func lowerThreadPriority(nice int) {
	if nice > 0 {
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice)
	}
}
