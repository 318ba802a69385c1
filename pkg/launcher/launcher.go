// Package launcher builds docrepo's commands and runs them as child
// processes. Services is docrepo's topology on one machine and Stack
// starts it: the development stack (`make run`), the end-to-end tests and
// (through devstack) the fault-injection suite all start the same
// binaries a deployment runs, in the same order, configured only through
// their environment, so what they exercise is what users run.
package launcher

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docrepo/docrepo/pkg/spawn"
)

// Commands are the deployable commands of the repository, by name, with
// their directories relative to the repository root.
var Commands = map[string]string{
	"gateway":    "gateway",
	"document":   "services/document",
	"folder":     "services/folder",
	"schema":     "services/schema",
	"search":     "services/search",
	"indexer":    "services/indexer",
	"docrepoctl": "pkg/cmd/docrepoctl",
	"devstack":   "pkg/cmd/devstack",
	"devnats":    "pkg/cmd/devnats",
}

// Build compiles the named commands (keys of Commands) of the repository at
// root into dir, in one `go build` of the workspace, and returns the path of
// each binary by name. It builds as `make build` does: with
// GOEXPERIMENT=simd unless GOEXPERIMENT is set (BuildEnv).
func Build(ctx context.Context, root, dir string, names ...string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	paths := map[string]string{}
	for _, name := range names {
		rel, ok := Commands[name]
		if !ok {
			return nil, fmt.Errorf("launcher: unknown command %q", name)
		}
		args = append(args, "./"+rel)
		paths[name] = filepath.Join(dir, filepath.Base(rel))
	}
	cmd := exec.CommandContext(ctx, goTool(), args...)
	cmd.Dir = root
	cmd.Env = BuildEnv(os.Environ())
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("launcher: go %v: %w\n%s", args, err, out)
	}
	for name, p := range paths {
		if name != filepath.Base(p) {
			// go build names a binary after its directory.
			if err := os.Rename(p, filepath.Join(dir, name)); err != nil {
				return nil, err
			}
			paths[name] = filepath.Join(dir, name)
		}
	}
	return paths, nil
}

// BuildEnv returns env (KEY=value entries) for building docrepo's commands:
// with GOEXPERIMENT=simd added when env sets no GOEXPERIMENT (an empty
// value counts as unset), so that the sentence encoder's dense layers and
// bert's kernels run on AVX2/AVX-512 (pkg/embed/uselite: about 8x the
// passages per second of a plain build). Such a build works on every
// platform; a CPU without those instructions runs the portable code. Any
// GOEXPERIMENT of the caller (GOEXPERIMENT=nosimd for a plain build) is
// kept as it is.
func BuildEnv(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if k != "GOEXPERIMENT" {
			out = append(out, kv)
		} else if v != "" {
			return append([]string(nil), env...)
		}
	}
	return append(out, "GOEXPERIMENT=simd")
}

// goTool is the go command that runs this program's build: $GOROOT/bin/go
// when GOROOT is set (go test sets it), else go from PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// RepoRoot returns the repository root: the nearest directory above dir
// (inclusive) that holds go.work.
func RepoRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if fileExists(filepath.Join(d, "go.work")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("launcher: no go.work above %s", abs)
		}
	}
}

// Spec describes one child process.
type Spec struct {
	// Name labels the process in errors and in its output.
	Name string
	// Path is the binary.
	Path string
	Args []string
	// Env is added to this process's environment (later entries win).
	Env []string
	// Output receives the child's stdout and stderr, line by line; nil
	// discards them.
	Output io.Writer
	// Prefix, when set, is written before each line of output (e.g.
	// "search   | ").
	Prefix string
	// Dir is the working directory (default: this process's).
	Dir string
	// Nice, when positive, lowers the child's CPU priority (Linux): its
	// nice value is this process's plus Nice (at most 19), so it gets less
	// CPU than this process's other children when the machine is busy, and
	// all it wants when it is not.
	Nice int
}

// Process is a running child.
type Process struct {
	spec Spec
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts the child in its own process group, so that a Ctrl-C at the
// terminal reaches only this process (which stops its children in order),
// and with the kernel's parent-death signal set to SIGKILL, so that a child
// never outlives a crashed parent holding its ports. It may be called from
// any goroutine, locked to its thread or not.
func Start(spec Spec) (*Process, error) {
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Dir = spec.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	// Forked on a thread that never exits (pkg/spawn): the parent-death
	// signal follows the forking thread, and Go ends a thread whenever a
	// goroutine locked to it returns.
	if err := spawn.Start(cmd, spec.Nice); err != nil {
		return nil, fmt.Errorf("launcher: start %s: %w", spec.Name, err)
	}
	p := &Process{spec: spec, cmd: cmd, done: make(chan struct{})}
	go func() {
		copyLines(spec.Output, spec.Prefix, out)
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Name is the process's name.
func (p *Process) Name() string { return p.spec.Name }

// Pid is the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the child has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the child's exit error; valid after Done is closed.
func (p *Process) Err() error { return p.err }

// Kill ends the child and anything it started (its process group) at once
// (SIGKILL), as a crash would, and waits for it.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Stop asks the child to stop (SIGTERM) and waits up to grace for it to
// exit, then kills it. It reports an exit that was not clean.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(grace):
		p.Kill()
		return fmt.Errorf("launcher: %s did not stop within %s; killed", p.spec.Name, grace)
	}
}

// copyLines copies r to w line by line with prefix before each line; with w
// nil it drains r.
func copyLines(w io.Writer, prefix string, r io.Reader) {
	if w == nil {
		_, _ = io.Copy(io.Discard, r)
		return
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		_, _ = fmt.Fprintf(w, "%s%s\n", prefix, sc.Bytes())
	}
	_, _ = io.Copy(io.Discard, r)
}

// LockedWriter serialises writes of several processes' output into one
// writer, a line at a time.
type LockedWriter struct {
	mu sync.Mutex
	W  io.Writer
}

func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}

// WaitTCP waits until addr accepts connections, the process exits, or
// timeout passes.
func WaitTCP(ctx context.Context, p *Process, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("launcher: %s exited before listening on %s: %v", p.spec.Name, addr, p.Err())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("launcher: %s not listening on %s after %s", p.spec.Name, addr, timeout), err)
		}
	}
}
