package launcher

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestChildOutlivesTheThreadThatAskedForIt: a child's parent-death signal
// (SIGKILL) follows the OS thread that forked it, and Go ends a thread when
// a goroutine locked to it (runtime.LockOSThread) exits without unlocking
// (deskew in pkg/ocr does so on purpose; golang/go#27505). A child started
// from such a goroutine, or from any goroutine whose thread another one
// then locks and leaves, must live on: Start forks every child on a thread
// that never exits.
func TestChildOutlivesTheThreadThatAskedForIt(t *testing.T) {
	tests := []struct {
		name string
		nice int
		// unlocked: the asking goroutine does not lock its thread (it
		// lives on); others is how many goroutines lock a thread and exit
		// after the start, on whichever threads Go gives them.
		unlocked bool
		others   int
	}{
		{name: "asked from a locked goroutine that exits", nice: 0},
		{name: "niced, asked from a locked goroutine that exits", nice: 2},
		{name: "asked from a goroutine, then other goroutines end threads", unlocked: true, others: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type started struct {
				p   *Process
				err error
			}
			// This goroutine's thread forks (unless Start hands the fork
			// to another thread) and ends when the goroutine returns.
			var s started
			start := func() {
				s.p, s.err = Start(Spec{Name: "p", Path: "/bin/sh", Args: []string{"-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done"}, Nice: tt.nice})
			}
			if tt.unlocked {
				done := make(chan struct{})
				go func() { start(); close(done) }()
				<-done
			} else {
				waitThreadGone(t, onThreadThatEnds(start))
			}
			if s.err != nil {
				t.Fatal(s.err)
			}
			t.Cleanup(func() { s.p.Kill() })
			for range tt.others {
				waitThreadGone(t, onThreadThatEnds(func() { runtime.Gosched() }))
			}
			select {
			case <-s.p.Done():
				t.Fatalf("the child died when the thread that asked for it ended: %v", s.p.Err())
			case <-time.After(200 * time.Millisecond):
			}
			if err := s.p.Stop(5 * time.Second); err != nil {
				t.Fatalf("Stop = %v, want a clean exit", err)
			}
		})
	}
}

// onThreadThatEnds runs f in a goroutine locked to an OS thread other than
// the main one (which Go never ends), and returns that thread's id once the
// goroutine has returned without unlocking it, which ends the thread.
func onThreadThatEnds(f func()) int {
	tid := make(chan int, 1)
	var run func()
	run = func() {
		runtime.LockOSThread()
		if syscall.Gettid() == syscall.Getpid() {
			// Hold the main thread so that the next goroutine gets
			// another one.
			done := make(chan struct{})
			go func() { run(); close(done) }()
			<-done
			runtime.UnlockOSThread()
			return
		}
		f()
		tid <- syscall.Gettid()
	}
	go run()
	return <-tid
}

// waitThreadGone waits until thread tid of this process has exited (the
// kernel sends the parent-death signals of its children before).
func waitThreadGone(t *testing.T, tid int) {
	t.Helper()
	path := fmt.Sprintf("/proc/self/task/%d", tid)
	for deadline := time.Now().Add(2 * time.Second); ; {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d still runs 2 s after its locked goroutine returned", tid)
		}
		time.Sleep(time.Millisecond)
	}
}
