package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// FreeAddr returns a loopback address for a child process (or this one) to
// listen on, with a port that was free a moment ago and that is reserved
// for this process for as long as it lives: no other call of FreeAddr, in
// this process or in any other on the machine, returns it meanwhile.
//
// The ports tried run from a random one between freePortLow and the kernel's range for
// the local ports of outgoing connections (ip_local_port_range): a port the
// kernel hands out itself (port 0) can be taken by any connection the
// test's processes open before the child binds it ("address already in
// use"). Checking that the port is free is not enough either: CI runs many
// test packages at once, each its own process calling FreeAddr, and one
// could pick a port another had just picked but whose child had not bound
// it yet (a CI run failed so: the stack test's gateway could not bind its
// port). So the port is reserved with a lock file (reservePort) that the
// kernel releases when this process exits, however it exits.
//
// When the kernel's range is not known, or no lock file can be made or
// locked, FreeAddr falls back to a port the kernel picks (port 0), with
// the risk above.
func FreeAddr() (string, error) {
	if high := ephemeralLow(); high > freePortLow+1000 {
		if dir, err := sharedPortLockDir(); err == nil {
			if port, err := reservePort(dir, freePortLow, high); err == nil {
				return loopback(port), nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// freePortLow is the lowest port FreeAddr returns: above the fixed ports of
// devstack and the benchmarks (9100…, 14222, 18080, 19100…).
const freePortLow = 20000

// ephemeralLow is the first port of the kernel's range for outgoing
// connections, or 0 when it is not known.
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return low
}

// portTries bounds the ports one reservePort tries.
const portTries = 100

// errNoPort reports that every port reservePort tried was taken.
var errNoPort = errors.New("launcher: no free port to reserve")

// reservePort reserves a port in [low, high) for this process and returns
// it: a port whose lock file in dir this process holds, and on which
// nothing listened a moment ago. It tries up to portTries ports, in order
// from a random one and wrapping around at high, so that it tries every
// port of a small range. It returns errNoPort when each was taken, and
// another error when a lock file cannot be made or locked.
func reservePort(dir string, low, high int) (int, error) {
	n := high - low
	if n <= 0 {
		return 0, fmt.Errorf("launcher: empty port range [%d, %d)", low, high)
	}
	start := rand.IntN(n)
	for i := range min(n, portTries) {
		port := low + (start+i)%n
		ok, err := reserve(dir, port)
		if err != nil {
			return 0, err
		}
		if ok {
			return port, nil
		}
	}
	return 0, errNoPort
}

// reserved holds the lock files of the ports this process reserved, open
// (so locked) until it exits: the kernel releases a flock lock with the
// last descriptor of its open file, on exit as on a crash, so no lock is
// left to clean up and none goes stale. The files are close-on-exec (as
// every file Go opens), so children do not hold them. Without these
// references a file's finalizer would close it, and free its port, at the
// next garbage collection.
var reserved struct {
	sync.Mutex
	files []*os.File
}

// reserve locks port's lock file in dir and checks that nothing listens on
// the port (something that does not use FreeAddr may); it keeps the lock
// when the port is free, and reports whether it did. A lock held by
// another process counts as taken, and so does one this process holds
// from an earlier reservation: a flock lock belongs to an open file, and
// each reservation opens the lock file anew.
func reserve(dir string, port int) (bool, error) {
	f, err := lockPortFile(dir, port)
	if err != nil || f == nil {
		return false, err
	}
	if !listenable(port) {
		f.Close() // releases the lock
		return false, nil
	}
	reserved.Lock()
	reserved.files = append(reserved.files, f)
	reserved.Unlock()
	return true, nil
}

// lockPortFile opens port's lock file in dir, making it if need be, and
// locks it without waiting. It returns nil and no error when another open
// of the file holds the lock. Lock files are never removed: removing one
// would let a process lock the old file while another makes and locks a
// new one of the same name. There is at most one, empty, per port.
func lockPortFile(dir string, port int) (*os.File, error) {
	// Reading is enough to lock, so a file another user made will do.
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)+".lock"), os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	err = flockNB(f)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, nil
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("launcher: lock %s: %w", f.Name(), err)
	}
	return f, nil
}

// flockNB takes an exclusive flock lock on f without waiting.
func flockNB(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// listenable reports whether a listener can be opened on port of the
// loopback address; it closes it at once.
func listenable(port int) bool {
	l, err := net.Listen("tcp", loopback(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func loopback(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// sharedPortLockDir is the directory of FreeAddr's lock files, chosen once
// (portLockDir) from portLockDirs.
var sharedPortLockDir = sync.OnceValues(func() (string, error) {
	return portLockDir(portLockDirs())
})

// portLockDirs are the directories FreeAddr may keep its lock files in, in
// order of preference: a fixed one, so that every process on the machine
// shares it whatever its TMPDIR (test helpers set their own), then one in
// os.TempDir() for a machine whose /tmp cannot be written.
func portLockDirs() []string {
	return []string{"/tmp/docrepo-ports", filepath.Join(os.TempDir(), "docrepo-ports")}
}

// portLockDir returns the first of dirs that is, or can be made, a
// directory this process can make files in.
func portLockDir(dirs []string) (string, error) {
	var errs []error
	for _, dir := range dirs {
		err := makeSharedDir(dir)
		if err == nil {
			return dir, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("launcher: no directory for port lock files: %w", errors.Join(errs...))
}

// makeSharedDir makes dir, when it does not exist, writable by every user
// with the sticky bit (as /tmp), so that every user's processes share it,
// and checks that dir is a directory this process can make files in.
func makeSharedDir(dir string) error {
	err := os.Mkdir(dir, 0o777)
	switch {
	case err == nil:
		// Mkdir's mode is masked by the umask.
		_ = os.Chmod(dir, 0o777|os.ModeSticky)
	case !errors.Is(err, fs.ErrExist):
		return err
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}
	const writable = 0x2 // W_OK of access(2)
	if err := syscall.Access(dir, writable); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return nil
}
