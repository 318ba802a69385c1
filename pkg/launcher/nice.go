package launcher

import (
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Linux keeps a nice value per thread, and a child inherits the value of
// the thread that forked it. A child that should run at a lower CPU
// priority is therefore started from an OS thread of its own whose nice
// value was raised once: raising a running child's value afterwards
// would race with the threads its runtime is starting, and this process
// must keep its own priority. The thread lives as long as this process,
// because a child's parent-death signal (Spec.Start sets it) follows the
// thread that forked it, not the process.

// spawnRequest asks a spawner thread to start cmd.
type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnersMu sync.Mutex
	spawners   = map[int]chan spawnRequest{}
)

// startNice starts cmd with a nice value nice (> 0) above this process's.
func startNice(cmd *exec.Cmd, nice int) error {
	ch, err := spawner(nice)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	ch <- spawnRequest{cmd: cmd, done: done}
	return <-done
}

// spawner returns the requests channel of the thread that starts children
// nice steps below this process's priority, starting that thread the first
// time.
func spawner(nice int) (chan<- spawnRequest, error) {
	spawnersMu.Lock()
	defer spawnersMu.Unlock()
	if ch, ok := spawners[nice]; ok {
		return ch, nil
	}
	ch := make(chan spawnRequest)
	ready := make(chan error, 1)
	go spawnLoop(nice, ch, ready, nil)
	if err := <-ready; err != nil {
		return nil, err
	}
	spawners[nice] = ch
	return ch, nil
}

// spawnLoop locks its goroutine to an OS thread, raises the thread's nice
// value and starts the children asked for on ch. locked, when not nil, is
// closed once it holds a thread other than the main one.
func spawnLoop(nice int, ch <-chan spawnRequest, ready chan<- error, locked chan<- struct{}) {
	// Locked for good (unless it is the main thread): the thread keeps
	// its nice value, serves only this loop, and outlives every child it
	// forks.
	runtime.LockOSThread()
	tid := syscall.Gettid()
	if tid == syscall.Getpid() {
		// The main thread stands for the process in ps and top: leave it
		// alone. While this goroutine holds it, the next one cannot land
		// on it.
		next := make(chan struct{})
		go spawnLoop(nice, ch, ready, next)
		<-next
		runtime.UnlockOSThread()
		return
	}
	if locked != nil {
		close(locked)
	}
	// The raw getpriority of Linux answers 20 - nice.
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err == nil {
		err = syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(20-prio+nice, 19))
	}
	if err != nil {
		ready <- fmt.Errorf("launcher: nice value +%d: %w", nice, err)
		return // the locked thread exits with the goroutine
	}
	ready <- nil
	for r := range ch {
		r.done <- r.cmd.Start()
	}
}
