package launcher

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Restart back-off: a child that exits is started again after a delay that
// doubles from BackoffMin up to BackoffMax, and starts from BackoffMin again
// once a child has stayed up for StableAfter.
const (
	BackoffMin  = 200 * time.Millisecond
	BackoffMax  = 10 * time.Second
	StableAfter = 30 * time.Second
)

// Supervisor keeps child processes running like a process manager: a child
// that exits while the supervisor is not stopping — a crash, a kill -9, an
// error at start-up — is logged and started again after a back-off, and the
// others keep running. Only Stop ends them.
type Supervisor struct {
	// Log receives one line per start, exit and restart.
	Log io.Writer
	// PidDir, when set, holds a file <name>.pid with each child's current
	// pid, so that tools (and the fault-injection tests) can find them.
	PidDir string

	mu       sync.Mutex
	children []*child
	stopping bool
	wg       sync.WaitGroup
}

type child struct {
	spec     Spec
	proc     *Process
	restarts int
}

// Start starts spec's process and supervises it.
func (s *Supervisor) Start(spec Spec) error {
	p, err := Start(spec)
	if err != nil {
		return err
	}
	c := &child{spec: spec, proc: p}
	s.mu.Lock()
	s.children = append(s.children, c)
	s.mu.Unlock()
	s.writePid(c)
	s.logf("%s started (pid %d)", spec.Name, p.Pid())
	s.wg.Add(1)
	go s.watch(c)
	return nil
}

func (s *Supervisor) watch(c *child) {
	defer s.wg.Done()
	delay := BackoffMin
	for {
		s.mu.Lock()
		p := c.proc
		s.mu.Unlock()
		started := time.Now()
		<-p.Done()
		s.mu.Lock()
		stopping := s.stopping
		s.mu.Unlock()
		if stopping {
			return
		}
		if time.Since(started) >= StableAfter {
			delay = BackoffMin
		}
		s.logf("%s exited unexpectedly (%v); restarting in %v", c.spec.Name, exitText(p.Err()), delay)
		time.Sleep(delay)
		delay = min(2*delay, BackoffMax)
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			return
		}
		np, err := Start(c.spec)
		if err != nil {
			s.mu.Unlock()
			s.logf("%s could not be started again: %v", c.spec.Name, err)
			// Try again after the next delay: wait on a process that is
			// already done.
			c.proc = &Process{spec: c.spec, done: closedChan(), err: err}
			continue
		}
		c.proc = np
		// The pid file names the new process before the restart counts:
		// whoever sees the count sees the file.
		s.writePid(c)
		c.restarts++
		restarts := c.restarts
		s.mu.Unlock()
		s.logf("%s restarted (pid %d, restart %d)", c.spec.Name, np.Pid(), restarts)
	}
}

func closedChan() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// Process returns the current process of the named child (nil when there
// is none).
func (s *Supervisor) Process(name string) *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.children {
		if c.spec.Name == name {
			return c.proc
		}
	}
	return nil
}

// Restarts returns how often the named child was started again.
func (s *Supervisor) Restarts(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.children {
		if c.spec.Name == name {
			return c.restarts
		}
	}
	return 0
}

// Stop stops every child, newest first, each with the grace period
// (SIGTERM, then SIGKILL), and waits for the supervision to end.
func (s *Supervisor) Stop(grace time.Duration) {
	s.mu.Lock()
	s.stopping = true
	children := append([]*child(nil), s.children...)
	s.mu.Unlock()
	for i := len(children) - 1; i >= 0; i-- {
		s.mu.Lock()
		p := children[i].proc
		s.mu.Unlock()
		if p.cmd == nil {
			continue // a start that failed
		}
		if err := p.Stop(grace); err != nil {
			s.logf("%s: %v", children[i].spec.Name, err)
		}
	}
	s.wg.Wait()
}

func (s *Supervisor) writePid(c *child) {
	if s.PidDir == "" {
		return
	}
	_ = os.MkdirAll(s.PidDir, 0o755)
	// Written aside and renamed: a reader never sees an empty file.
	path := filepath.Join(s.PidDir, c.spec.Name+".pid")
	if err := os.WriteFile(path+".tmp", []byte(strconv.Itoa(c.proc.Pid())+"\n"), 0o644); err == nil {
		_ = os.Rename(path+".tmp", path)
	}
}

func (s *Supervisor) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, "supervisor: "+format+"\n", args...)
	}
}
