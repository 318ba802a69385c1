package launcher

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// holdPortsEnv, set to "dir low high", makes this test binary a process
// that reserves the ports it can in [low, high) with the lock files of
// dir (as many times as there are ports), writes them on one line ("held
// 20001 20002"), and holds them until its standard input closes
// (holdPorts).
const holdPortsEnv = "LAUNCHER_HOLD_PORTS"

// holdPorts plays the process holdPortsEnv describes.
func holdPorts(spec string) {
	var (
		dir       string
		low, high int
	)
	if _, err := fmt.Sscan(spec, &dir, &low, &high); err != nil {
		fmt.Println("bad", holdPortsEnv, err)
		os.Exit(2)
	}
	held := []string{"held"}
	for range high - low {
		port, err := reservePort(dir, low, high)
		if errors.Is(err, errNoPort) {
			break
		}
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		held = append(held, strconv.Itoa(port))
	}
	fmt.Println(strings.Join(held, " "))
	_, _ = bufio.NewReader(os.Stdin).ReadString(0) // until EOF
}

// startHolder starts a process holding the ports of [low, high) that it can
// reserve with dir's lock files, and returns them and a function that
// makes it exit and waits for it.
func startHolder(t *testing.T, dir string, low, high int) (held []int, exit func()) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", holdPortsEnv, dir, low, high))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exit = func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("port holder: %v", err)
		}
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	fields := strings.Fields(line)
	if err != nil || len(fields) == 0 || fields[0] != "held" {
		exit()
		t.Fatalf("port holder wrote %q (%v), want the ports it holds", line, err)
	}
	for _, f := range fields[1:] {
		port, err := strconv.Atoi(f)
		if err != nil {
			exit()
			t.Fatalf("port holder wrote %q", line)
		}
		held = append(held, port)
	}
	return held, exit
}

// freeRange returns the first port of n consecutive ones on which nothing
// listens, from FreeAddr's range.
func freeRange(t *testing.T, n int) int {
	t.Helper()
	high := ephemeralLow()
	if high <= freePortLow+1000 {
		high = 32768 // Linux's default
	}
	for range 100 {
		low := freePortLow + rand.IntN(high-freePortLow-n)
		if !slices.ContainsFunc(portRange(low, low+n), func(p int) bool { return !listenable(p) }) {
			return low
		}
	}
	t.Fatalf("no %d consecutive free ports in [%d, %d)", n, freePortLow, high)
	return 0
}

// portRange returns the ports of [low, high).
func portRange(low, high int) []int {
	var ports []int
	for p := low; p < high; p++ {
		ports = append(ports, p)
	}
	return ports
}

// reserveAll calls reservePort until it fails and returns the ports it
// got, in order; it fails t on an error other than errNoPort or after max
// ports.
func reserveAll(t *testing.T, dir string, low, high, max int) []int {
	t.Helper()
	var got []int
	for range max + 1 {
		port, err := reservePort(dir, low, high)
		if errors.Is(err, errNoPort) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, port)
	}
	t.Fatalf("reservePort returned %d ports of [%d, %d): %v", len(got), low, high, got)
	return nil
}

// TestReservePortHandsOutEachPortOnceInAProcess: n reservations in a range
// of n ports return each port once, and the next finds none.
func TestReservePortHandsOutEachPortOnceInAProcess(t *testing.T) {
	tests := []struct {
		name  string
		ports int
	}{
		{name: "one port", ports: 1},
		{name: "four ports", ports: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			low := freeRange(t, tt.ports)
			got := reserveAll(t, dir, low, low+tt.ports, tt.ports)
			slices.Sort(got)
			if want := portRange(low, low+tt.ports); !slices.Equal(got, want) {
				t.Errorf("reserved %v, want each of %v once", got, want)
			}
		})
	}
}

// TestReservePortSkipsThePortsAnotherProcessHolds: while another process
// holds ports, this one gets only the others of the range; once it exits,
// its ports can be had again.
func TestReservePortSkipsThePortsAnotherProcessHolds(t *testing.T) {
	tests := []struct {
		name string
		// ports is the size of the range this process reserves in,
		// holds the first ports of it, which the other process holds.
		ports, holds int
	}{
		{name: "holds all", ports: 3, holds: 3},
		{name: "holds some", ports: 3, holds: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			low := freeRange(t, tt.ports)
			held, exit := startHolder(t, dir, low, low+tt.holds)
			slices.Sort(held)
			if want := portRange(low, low+tt.holds); !slices.Equal(held, want) {
				exit()
				t.Fatalf("the other process holds %v, want %v", held, want)
			}
			got := reserveAll(t, dir, low, low+tt.ports, tt.ports)
			slices.Sort(got)
			if want := portRange(low+tt.holds, low+tt.ports); !slices.Equal(got, want) {
				t.Errorf("while another process holds %v, reserved %v, want %v", held, got, want)
			}
			exit()
			after := reserveAll(t, dir, low, low+tt.ports, tt.ports)
			slices.Sort(after)
			if !slices.Equal(after, held) {
				t.Errorf("once the other process exited, reserved %v, want the ports it held, %v", after, held)
			}
		})
	}
}

// TestFreeAddrKeepsItsPortLocked: the port of FreeAddr stays locked in the
// directory every process shares.
func TestFreeAddrKeepsItsPortLocked(t *testing.T) {
	if ephemeralLow() <= freePortLow+1000 {
		t.Skip("ip_local_port_range unknown or low: FreeAddr falls back to the kernel's choice")
	}
	dir, err := sharedPortLockDir()
	if err != nil {
		t.Skipf("FreeAddr falls back to the kernel's choice: %v", err)
	}
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	f, err := os.Open(filepath.Join(dir, port+".lock"))
	if err != nil {
		t.Fatalf("FreeAddr = %s: %v", addr, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Errorf("locking the lock file of FreeAddr's %s: %v, want %v", addr, err, syscall.EWOULDBLOCK)
	}
}

// TestPortLockDirTakesTheFirstUsable: the lock files go in the first
// directory that is or can be made one this process makes files in; one
// it makes is shared by every user.
func TestPortLockDirTakesTheFirstUsable(t *testing.T) {
	base := t.TempDir()
	existing := filepath.Join(base, "existing")
	if err := os.Mkdir(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		dirs    []string
		want    string
		wantErr bool
	}{
		{name: "existing first", dirs: []string{existing, filepath.Join(base, "new1")}, want: existing},
		{name: "made", dirs: []string{filepath.Join(base, "new2"), existing}, want: filepath.Join(base, "new2")},
		{name: "a file in the way", dirs: []string{file, existing}, want: existing},
		{name: "no parent", dirs: []string{filepath.Join(base, "none", "x"), existing}, want: existing},
		{name: "none usable", dirs: []string{file}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := portLockDir(tt.dirs)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("portLockDir(%v) = %q, %v; want %q (error: %t)", tt.dirs, got, err, tt.want, tt.wantErr)
			}
			if tt.wantErr || got == existing {
				return
			}
			info, err := os.Stat(got)
			if err != nil {
				t.Fatal(err)
			}
			if mode := info.Mode(); mode.Perm() != 0o777 || mode&os.ModeSticky == 0 {
				t.Errorf("made %s with mode %v, want drwxrwxrwt", got, mode)
			}
		})
	}
}
