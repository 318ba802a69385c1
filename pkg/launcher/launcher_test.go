package launcher

import (
	"bytes"
	"context"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
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
		{name: "stops on SIGTERM", script: `echo ready; trap 'echo bye; exit 0' TERM; while :; do sleep 0.05; done`,
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

func TestWaitTCP(t *testing.T) {
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
