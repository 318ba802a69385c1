package miniotest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/spawn"
)

const (
	// Version is the MinIO module version the project's Makefile installs:
	// go install github.com/minio/minio@Version.
	Version = "v0.0.0-20260212201848-7aac2a2c5b7c"

	// EnvBinary names the variable that points at the server binary.
	EnvBinary = "MINIO_BIN"

	// EnvStrict names the variable that, set to 1, turns a missing binary
	// into a test failure instead of a skip.
	EnvStrict = "DOCREPO_TEST_STRICT"

	// Region is the region the server accepts (MinIO's default).
	Region = "us-east-1"

	startAttempts = 3
	readyTimeout  = 30 * time.Second
	stopTimeout   = 10 * time.Second
)

// Server is a running MinIO server. Its fields are fixed for its lifetime.
type Server struct {
	Endpoint  string // host:port of the S3 API, plain HTTP
	AccessKey string // root user
	SecretKey string // root password
	Region    string

	cmd      *exec.Cmd
	exited   chan struct{} // closed when the process has exited
	waitErr  error         // valid once exited is closed
	log      *tailBuffer
	stopOnce sync.Once
}

// URL returns the server's base URL, e.g. http://127.0.0.1:40123.
func (s *Server) URL() string { return "http://" + s.Endpoint }

var bucketSeq atomic.Uint64

// BucketName returns a bucket name no other caller in this process gets,
// derived from the test's name so that server logs are readable. The bucket
// is not created. Names follow the S3 rules: 3 to 63 characters of a-z,
// 0-9 and '-', starting and ending with a letter or digit.
func (s *Server) BucketName(t testing.TB) string {
	return bucketName(bucketSeq.Add(1), t.Name())
}

func bucketName(seq uint64, testName string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "t%03d", seq)
	dash := true // pending separator before the next alphanumeric run
	for _, r := range strings.ToLower(testName) {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			if dash {
				b.WriteByte('-')
				dash = false
			}
			b.WriteRune(r)
		} else {
			dash = true
		}
		if b.Len() >= 63 {
			break
		}
	}
	name := b.String()
	if len(name) > 63 {
		name = name[:63]
	}
	return strings.TrimRight(name, "-")
}

// BinaryPath returns where the MinIO binary is expected: $MINIO_BIN when set,
// else <user cache dir>/docrepo/tools/minio-<Version>/minio (the user cache
// dir is $XDG_CACHE_HOME or ~/.cache on Linux). It does not check that the
// file exists.
func BinaryPath() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		return p, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locating the user cache directory: %w", err)
	}
	return filepath.Join(cache, "docrepo", "tools", "minio-"+Version, "minio"), nil
}

// findBinary returns the binary's path, or an explanation of why it is
// unusable.
func findBinary() (string, error) {
	path, err := BinaryPath()
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fmt.Errorf("MinIO server binary %s: %w", path, err)
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("MinIO server binary %s is not an executable file", path)
	}
	return path, nil
}

func strict() bool { return os.Getenv(EnvStrict) == "1" }

var shared struct {
	mu      sync.Mutex
	enabled bool
	srv     *Server
	dir     string
	err     error // the shared server failed to start; reported to every test
}

// Share makes every later [Start] in this process return one shared server,
// started by the first of them, until the returned stop function is called.
// stop shuts the server down and deletes its data; call it after m.Run in
// TestMain.
func Share() (stop func()) {
	shared.mu.Lock()
	shared.enabled = true
	shared.mu.Unlock()
	return func() {
		shared.mu.Lock()
		defer shared.mu.Unlock()
		if shared.srv != nil {
			shared.srv.stop()
			os.RemoveAll(shared.dir)
		}
		shared.enabled, shared.srv, shared.dir, shared.err = false, nil, "", nil
	}
}

// Run runs the tests of m with one shared server (see [Share]) and returns
// the exit code for os.Exit.
func Run(m *testing.M) int {
	stop := Share()
	defer stop()
	return m.Run()
}

// Start returns a running MinIO server for t: the shared one when [Share] is
// in effect, else a dedicated server that is stopped, and its data deleted,
// when t ends. When the binary is missing, Start skips t, or fails it if
// DOCREPO_TEST_STRICT=1; a server that does not start always fails t.
// After a skip or failure Start returns nil (with a real testing.T it does
// not return at all).
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := findBinary()
	if err != nil {
		msg := fmt.Sprintf("miniotest: %v.\nInstall it with `make test`, or with "+
			"`GOBIN=<dir> go install github.com/minio/minio@%s` and %s=<dir>/minio.", err, Version, EnvBinary)
		if strict() {
			t.Fatalf("%s\n(%s=1: a missing MinIO is a failure, not a skip.)", msg, EnvStrict)
			return nil
		}
		t.Skipf("%s\n(Skipping; set %s=1 to fail instead.)", msg, EnvStrict)
		return nil
	}

	shared.mu.Lock()
	if shared.enabled {
		defer shared.mu.Unlock()
		if shared.srv == nil && shared.err == nil {
			dir, err := os.MkdirTemp("", "miniotest-")
			if err == nil {
				shared.srv, err = start(bin, dir)
				if err != nil {
					os.RemoveAll(dir)
				}
			}
			shared.dir, shared.err = dir, err
		}
		if shared.err != nil {
			t.Fatalf("miniotest: starting the shared MinIO server: %v", shared.err)
			return nil
		}
		return shared.srv
	}
	shared.mu.Unlock()

	srv, err := start(bin, t.TempDir())
	if err != nil {
		t.Fatalf("miniotest: %v", err)
		return nil
	}
	t.Cleanup(srv.stop) // registered after TempDir's, so it runs first
	return srv
}

// start launches a server with its data under dir, retrying a few times in
// case another process grabs the chosen port before the server binds it.
func start(bin, dir string) (*Server, error) {
	var errs []error
	for attempt := range startAttempts {
		srv, err := startOnce(bin, filepath.Join(dir, fmt.Sprintf("run%d", attempt)))
		if err == nil {
			return srv, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("MinIO did not start after %d attempts: %w", startAttempts, errors.Join(errs...))
}

func startOnce(bin, dir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		return nil, err
	}
	srv := &Server{
		Endpoint:  net.JoinHostPort("127.0.0.1", port),
		AccessKey: "miniotest",
		SecretKey: rand.Text(),
		Region:    Region,
		exited:    make(chan struct{}),
		log:       &tailBuffer{max: 64 << 10},
	}
	cmd := exec.Command(bin, "server",
		"--address", srv.Endpoint,
		"--certs-dir", filepath.Join(dir, "certs"),
		filepath.Join(dir, "data"))
	cmd.Env = append(withoutMinIOEnv(os.Environ()),
		"MINIO_ROOT_USER="+srv.AccessKey,
		"MINIO_ROOT_PASSWORD="+srv.SecretKey,
		"MINIO_BROWSER=off", // no console listener on a second port
		"MINIO_UPDATE=off",
	)
	cmd.Stdout = srv.log
	cmd.Stderr = srv.log
	cmd.SysProcAttr = sysProcAttr() // dies with the test binary where supported
	if err := spawn.Start(cmd, 0); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	srv.cmd = cmd
	go func() {
		srv.waitErr = cmd.Wait()
		close(srv.exited)
	}()
	if err := srv.waitReady(); err != nil {
		srv.stop()
		return nil, fmt.Errorf("%w\n--- MinIO output ---\n%s", err, srv.log.String())
	}
	return srv, nil
}

// waitReady polls the liveness endpoint until the process serves HTTP, then
// the cluster endpoint until the object layer and IAM are initialised (the
// liveness endpoint answers 200 before that).
func (s *Server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for _, path := range []string{"/minio/health/live", "/minio/health/cluster"} {
		for {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+path, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-s.exited:
				return fmt.Errorf("MinIO on %s exited before it was ready: %v", s.Endpoint, s.waitErr)
			case <-ctx.Done():
				return fmt.Errorf("MinIO on %s not ready after %v (last %s: %v)", s.Endpoint, readyTimeout, path, statusOrErr(resp, err))
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

func statusOrErr(resp *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

// stop terminates the server gracefully, killing it if it lingers.
func (s *Server) stop() {
	s.stopOnce.Do(func() {
		if s.cmd == nil || s.cmd.Process == nil {
			return
		}
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(stopTimeout):
			s.cmd.Process.Kill()
			<-s.exited
		}
	})
}

// freePort asks the kernel for a free TCP port on 127.0.0.1. The port is
// released before MinIO binds it, so another process may take it in between;
// start retries for that case.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// withoutMinIOEnv drops MINIO_* variables so a developer's own MinIO
// configuration cannot leak into the test server.
func withoutMinIOEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "MINIO_") {
			out = append(out, kv)
		}
	}
	return out
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
