package launcher

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A child killed as a crash would kill it is started again, with a new
// pid written to its pid file; the other children keep running; only Stop
// ends them all.
func TestSupervisorRestartsWhatDies(t *testing.T) {
	log := newSyncBuffer()
	s := &Supervisor{Log: log, PidDir: t.TempDir()}
	for _, name := range []string{"a", "b"} {
		if err := s.Start(Spec{Name: name, Path: "/bin/sh", Args: []string{"-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done"}}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := s.Process("a"), s.Process("b")
	a.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for s.Restarts("a") == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if s.Restarts("a") != 1 {
		t.Fatalf("a was not restarted; log:\n%s", log.String())
	}
	na := s.Process("a")
	if na.Pid() == a.Pid() {
		t.Fatal("a's process did not change")
	}
	pid, err := os.ReadFile(filepath.Join(s.PidDir, "a.pid"))
	if err != nil || strings.TrimSpace(string(pid)) != strconv.Itoa(na.Pid()) {
		t.Fatalf("a.pid = %q (%v), want %d", pid, err, na.Pid())
	}
	select {
	case <-b.Done():
		t.Fatal("b stopped when a died")
	default:
	}
	if s.Process("b") != b || s.Restarts("b") != 0 {
		t.Fatal("b was restarted")
	}
	s.Stop(5 * time.Second)
	for _, p := range []*Process{na, b} {
		select {
		case <-p.Done():
		default:
			t.Fatalf("%s still running after Stop", p.Name())
		}
	}
	if !strings.Contains(log.String(), "a exited unexpectedly") {
		t.Fatalf("log lacks the exit:\n%s", log.String())
	}
}

// A child that keeps failing is retried with a growing delay, not in a
// tight loop.
func TestSupervisorBacksOff(t *testing.T) {
	s := &Supervisor{}
	start := time.Now()
	if err := s.Start(Spec{Name: "flaky", Path: "/bin/sh", Args: []string{"-c", "exit 3"}}); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(time.Second)
	// The third restart comes after waits of 200, 400 and 800 ms: never
	// before 1.4 s (without the back-off it would come after 600 ms).
	// A loaded machine only makes it later, so wait for it rather than
	// counting the restarts in a fixed time.
	for s.Restarts("flaky") < 3 {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%d restarts in 30 s, want 3", s.Restarts("flaky"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := time.Since(start); d < 1400*time.Millisecond {
		t.Fatalf("3 restarts after %v, want no sooner than 1.4 s with the back-off", d)
	}
}
