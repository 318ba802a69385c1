//go:build linux

package spawn

import (
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// request asks a spawner thread to start cmd.
type request struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnersMu sync.Mutex
	spawners   = map[int]chan request{}
)

// Start starts cmd (cmd.Start) on an OS thread that lives as long as this
// process, with a nice value nice steps above this process's (at most 19;
// nice <= 0 keeps this process's). A failure to raise the thread's nice
// value is returned and the child is not started.
func Start(cmd *exec.Cmd, nice int) error {
	ch, err := spawner(max(nice, 0))
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	ch <- request{cmd: cmd, done: done}
	return <-done
}

// Threads is the number of spawner threads started so far (one per nice
// value used), for tests that count this process's threads.
func Threads() int {
	spawnersMu.Lock()
	defer spawnersMu.Unlock()
	return len(spawners)
}

// spawner returns the requests channel of the thread that starts children
// nice steps below this process's priority, starting that thread the first
// time.
func spawner(nice int) (chan<- request, error) {
	spawnersMu.Lock()
	defer spawnersMu.Unlock()
	if ch, ok := spawners[nice]; ok {
		return ch, nil
	}
	ch := make(chan request)
	ready := make(chan error, 1)
	go loop(nice, ch, ready, nil)
	if err := <-ready; err != nil {
		return nil, err
	}
	spawners[nice] = ch
	return ch, nil
}

// loop locks its goroutine to an OS thread other than the main one, raises
// the thread's nice value and starts the children asked for on ch, for as
// long as the process lives: the goroutine never returns while it holds
// the thread, so the thread never exits. locked, when not nil, is closed
// once it holds a thread other than the main one.
func loop(nice int, ch <-chan request, ready chan<- error, locked chan<- struct{}) {
	runtime.LockOSThread()
	tid := syscall.Gettid()
	if tid == syscall.Getpid() {
		// The main thread stands for the process in ps and top: leave it
		// alone. While this goroutine holds it, the next one cannot land
		// on it.
		next := make(chan struct{})
		go loop(nice, ch, ready, next)
		<-next
		runtime.UnlockOSThread()
		return
	}
	if locked != nil {
		close(locked)
	}
	if nice > 0 {
		// The raw getpriority of Linux answers 20 - nice.
		prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
		if err == nil {
			err = syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(20-prio+nice, 19))
		}
		if err != nil {
			ready <- fmt.Errorf("spawn: nice value +%d: %w", nice, err)
			// Unlocked, not left to exit: before this goroutine locked
			// it, the thread may have forked children of other code,
			// and its nice value is unchanged.
			runtime.UnlockOSThread()
			return
		}
	}
	ready <- nil
	for r := range ch {
		r.done <- r.cmd.Start()
	}
}
