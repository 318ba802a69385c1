package launcher

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/spawn"
)

// syncBuffer is a bytes.Buffer safe for the copier goroutine and the test.
type syncBuffer struct {
	LockedWriter
	buf bytes.Buffer
}

func newSyncBuffer() *syncBuffer {
	b := &syncBuffer{}
	b.W = &b.buf
	return b
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestProcessOutputAndStop(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		grace    time.Duration
		wantOut  string
		wantErr  bool
		wantKill bool
	}{
		{name: "stops on SIGTERM", script: `trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done`,
			grace: 5 * time.Second, wantOut: "p| ready\np| bye\n"},
		{name: "killed when it ignores SIGTERM", script: `trap '' TERM; echo stubborn; while :; do sleep 0.05; done`,
			grace: 300 * time.Millisecond, wantOut: "p| stubborn\n", wantErr: true, wantKill: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := newSyncBuffer()
			p, err := Start(Spec{Name: "p", Path: "/bin/sh", Args: []string{"-c", tt.script}, Output: out, Prefix: "p| "})
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for !strings.Contains(out.String(), "\n") && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			err = p.Stop(tt.grace)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Stop = %v, want error %v", err, tt.wantErr)
			}
			if got := out.String(); got != tt.wantOut {
				t.Fatalf("output = %q, want %q", got, tt.wantOut)
			}
			ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
			if killed := ws.Signaled() && ws.Signal() == syscall.SIGKILL; killed != tt.wantKill {
				t.Fatalf("killed = %v, want %v (status %v)", killed, tt.wantKill, p.cmd.ProcessState)
			}
		})
	}
}

func TestKillIsACrash(t *testing.T) {
	p, err := Start(Spec{Name: "p", Path: "/bin/sh", Args: []string{"-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()
	select {
	case <-p.Done():
	default:
		t.Fatal("Kill returned before the process ended")
	}
	if p.Err() == nil {
		t.Fatal("a killed process reports a clean exit")
	}
}

func TestWaitTCPReturnsOnListenAndFailsOnExit(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sleeper, err := Start(Spec{Name: "sleeper", Path: "/bin/sh", Args: []string{"-c", "sleep 30"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sleeper.Kill()
	if err := WaitTCP(context.Background(), sleeper, l.Addr().String(), 5*time.Second); err != nil {
		t.Fatalf("listening address: %v", err)
	}
	free, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	quitter, err := Start(Spec{Name: "quitter", Path: "/bin/sh", Args: []string{"-c", "exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	err = WaitTCP(context.Background(), quitter, free, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited before listening") {
		t.Fatalf("WaitTCP on a process that exits = %v, want an exit error", err)
	}
}

// niceOf reads a process's nice value (field 19 of /proc/<pid>/stat).
func niceOf(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name (field 2) may hold spaces; fields count from its ')'.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	n, err := strconv.Atoi(fields[16])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNiceLowersOnlyTheChildsPriority: a child started with Nice runs that many steps below this
// process's priority (at most 19), the others and this process keep
// theirs, and a niced child lives until it is stopped (its parent-death
// signal follows the thread that forked it, which must not go away).
func TestNiceLowersOnlyTheChildsPriority(t *testing.T) {
	own := niceOf(t, os.Getpid())
	tests := []struct {
		name string
		nice int
		want int
	}{
		{name: "no nice", nice: 0, want: own},
		{name: "three steps down", nice: 3, want: min(own+3, 19)},
		{name: "again, from the same thread", nice: 3, want: min(own+3, 19)},
		{name: "at most 19", nice: 40, want: 19},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(Spec{Name: "p", Path: "/bin/sh", Args: []string{"-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done"}, Nice: tt.nice})
			if err != nil {
				t.Fatal(err)
			}
			if got := niceOf(t, p.Pid()); got != tt.want {
				t.Errorf("child's nice value = %d, want %d", got, tt.want)
			}
			// Go moves goroutines between threads: a thread left with a
			// raised value would show here sooner or later.
			runtime.GC()
			time.Sleep(300 * time.Millisecond)
			select {
			case <-p.Done():
				t.Fatalf("the child died on its own: %v", p.Err())
			default:
			}
			if err := p.Stop(5 * time.Second); err != nil {
				t.Fatalf("Stop = %v, want a clean exit", err)
			}
			if got := niceOf(t, os.Getpid()); got != own {
				t.Errorf("this process's nice value went from %d to %d", own, got)
			}
			// Only the spawner threads (one per Nice value used) differ.
			tasks, err := os.ReadDir("/proc/self/task")
			if err != nil {
				t.Fatal(err)
			}
			var niced []int
			for _, task := range tasks {
				tid, _ := strconv.Atoi(task.Name())
				if n := niceOf(t, tid); n != own {
					niced = append(niced, n)
				}
			}
			threads := spawn.Threads()
			if len(niced) > threads {
				t.Errorf("%d threads of this process run with another nice value (%v), want at most %d", len(niced), niced, threads)
			}
		})
	}
}

// TestFreeAddrIsFreeAndBelowTheEphemeralRange: the addresses are free, and below the kernel's range for
// outgoing connections' local ports, which a connection could take first.
func TestFreeAddrIsFreeAndBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if low <= freePortLow+1000 {
		t.Skipf("ip_local_port_range starts at %d: FreeAddr falls back to the kernel's choice", low)
	}
	for range 20 {
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if port < freePortLow || port >= low {
			t.Errorf("FreeAddr = %s, want a port in [%d, %d)", addr, freePortLow, low)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("FreeAddr = %s, not free: %v", addr, err)
		}
		l.Close()
	}
}

func TestBuildEnvAddsSIMDUnlessSet(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{name: "unset", env: []string{"PATH=/bin", "HOME=/h"}, want: []string{"PATH=/bin", "HOME=/h", "GOEXPERIMENT=simd"}},
		{name: "empty counts as unset", env: []string{"GOEXPERIMENT=", "PATH=/bin"}, want: []string{"PATH=/bin", "GOEXPERIMENT=simd"}},
		{name: "plain build kept", env: []string{"PATH=/bin", "GOEXPERIMENT=nosimd"}, want: []string{"PATH=/bin", "GOEXPERIMENT=nosimd"}},
		{name: "other experiments kept", env: []string{"GOEXPERIMENT=greenteagc", "HOME=/h"}, want: []string{"GOEXPERIMENT=greenteagc", "HOME=/h"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := BuildEnv(tc.env); !slices.Equal(got, tc.want) {
				t.Errorf("BuildEnv(%q) = %q, want %q", tc.env, got, tc.want)
			}
		})
	}
}
