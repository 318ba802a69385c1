package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/docrepo/docrepo/gateway/httpapi"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/catalog"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/launcher"
	"github.com/docrepo/docrepo/pkg/logging"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// stack is the running system under test.
type stack struct {
	baseURL  string
	dbURL    string
	natsURL  string
	pool     *pgxpool.Pool
	identity *identity.Store
	addrs    map[string]string
	// running lists the services this stack runs.
	running map[string]bool
}

var stk *stack

// logs captures the JSON log records of every process of the stack.
var logs logBuffer

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns every captured record that has all the given attributes.
func (b *logBuffer) records(attrs map[string]string) []map[string]any {
	b.mu.Lock()
	data := append([]byte(nil), b.buf.Bytes()...)
	b.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(data, []byte("\n")) {
		var rec map[string]any
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		match := true
		for k, v := range attrs {
			if fmt.Sprint(rec[k]) != v {
				match = false
				break
			}
		}
		if match {
			out = append(out, rec)
		}
	}
	return out
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The identity tables hold the test users; each service migrates its
	// own tables when it starts, as in a deployment.
	dbURL, drop, err := pgtest.CreateDatabase(ctx, identity.Migrations)
	var unavailable pgtest.ErrUnavailable
	if errors.As(err, &unavailable) && os.Getenv("DOCREPO_TEST_STRICT") != "1" {
		fmt.Println("skipping end-to-end tests:", err)
		return 0
	}
	if err != nil {
		fmt.Println("e2e:", err)
		return 1
	}
	defer drop()
	natsDir, err := os.MkdirTemp("", "docrepo-e2e-nats-")
	if err != nil {
		fmt.Println("e2e:", err)
		return 1
	}
	defer os.RemoveAll(natsDir)
	ns, err := natsserver.NewServer(&natsserver.Options{
		Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: natsDir, JetStreamMaxMemory: 256 << 20, JetStreamMaxStore: 2 << 30,
	})
	if err != nil {
		fmt.Println("e2e: nats:", err)
		return 1
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		fmt.Println("e2e: nats not ready")
		return 1
	}
	defer ns.Shutdown()
	s, stop, err := startStack(ctx, dbURL, ns.ClientURL())
	if err != nil {
		fmt.Println("e2e: start stack:", err)
		return 1
	}
	stk = s
	code := m.Run()
	stop()
	return code
}

func listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// serviceEnv is what the environment function of a service gets.
type serviceEnv struct {
	// addrs maps every service name to its gRPC address.
	addrs map[string]string
	stack *stack
	// tempDir is a directory of the run, removed when the stack stops.
	tempDir string
}

// registry maps a service name to the environment (beyond the stack's
// common one) its binary runs with; each service's stack_<name>_test.go
// file registers itself in an init function.
var registry = map[string]func(ctx context.Context, env serviceEnv) ([]string, error){}

// binaries are the stack's commands, built once per test run.
var binaries map[string]string

// startStack builds the services' binaries and starts each as its own
// process, as a deployment runs them, configured only through its
// environment; the gateway runs in this process (it is the code under
// test here). It returns a function that stops them all.
func startStack(ctx context.Context, dbURL, natsURL string) (*stack, func(), error) {
	// Every process's logs go to one captured stream (tests read it, e.g.
	// to follow a trace id), and to stderr with DOCREPO_E2E_LOG=1.
	var logOut io.Writer = &logs
	if os.Getenv("DOCREPO_E2E_LOG") != "" {
		logOut = io.MultiWriter(&logs, os.Stderr)
	}
	root, err := launcher.RepoRoot(".")
	if err != nil {
		return nil, nil, err
	}
	tempDir, err := os.MkdirTemp("", "docrepo-e2e-")
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	sort.Strings(names)
	if binaries, err = launcher.Build(ctx, root, filepath.Join(tempDir, "bin"), names...); err != nil {
		os.RemoveAll(tempDir)
		return nil, nil, err
	}
	// Tests read the services' tables (qualified by schema) and write doc
	// types and templates as docrepoctl does, in the schema service's schema.
	pool, err := database.Open(ctx, dbURL, catalog.Schema)
	if err != nil {
		os.RemoveAll(tempDir)
		return nil, nil, err
	}
	s := &stack{dbURL: dbURL, natsURL: natsURL, pool: pool, identity: identity.NewStore(pool), addrs: map[string]string{}, running: map[string]bool{}}

	// Every service gets an address first, so each knows the others'
	// before any starts. Services not registered get an address nothing
	// listens on, so their routes answer 503 rather than pretending.
	for _, name := range []string{"document", "folder", "search", "schema", "indexer"} {
		if s.addrs[name], err = launcher.FreeAddr(); err != nil {
			pool.Close()
			os.RemoveAll(tempDir)
			return nil, nil, err
		}
	}
	var procs []*launcher.Process
	stopProcs := func() {
		for i := len(procs) - 1; i >= 0; i-- {
			if err := procs[i].Stop(30 * time.Second); err != nil {
				fmt.Fprintf(os.Stderr, "e2e: %s: %v\n", procs[i].Name(), err)
			}
		}
	}
	fail := func(err error) (*stack, func(), error) {
		stopProcs()
		pool.Close()
		os.RemoveAll(tempDir)
		return nil, nil, err
	}
	for _, name := range names {
		extra, err := registry[name](ctx, serviceEnv{addrs: s.addrs, stack: s, tempDir: tempDir})
		if err != nil {
			return fail(fmt.Errorf("%s: %w", name, err))
		}
		metrics, err := launcher.FreeAddr()
		if err != nil {
			return fail(err)
		}
		env := append(s.commonEnv(), "DOCREPO_GRPC_ADDR="+s.addrs[name], "DOCREPO_METRICS_ADDR="+metrics)
		p, err := launcher.Start(launcher.Spec{Name: name, Path: binaries[name], Env: append(env, extra...), Output: logOut})
		if err != nil {
			return fail(err)
		}
		procs = append(procs, p)
		s.running[name] = true
	}
	for _, p := range procs {
		if err := launcher.WaitTCP(ctx, p, s.addrs[p.Name()], 60*time.Second); err != nil {
			return fail(err)
		}
	}

	gwLis, err := listen()
	if err != nil {
		return fail(err)
	}
	s.baseURL = "http://" + gwLis.Addr().String()
	gwCtx, cancel := context.WithCancel(ctx)
	gwDone := make(chan error, 1)
	go func() {
		gwDone <- httpapi.Run(gwCtx, httpapi.Config{
			Listener:       gwLis,
			Logger:         logging.NewTo(logOut, "gateway", "info", "json"),
			DocumentAddr:   s.addrs["document"],
			FolderAddr:     s.addrs["folder"],
			SearchAddr:     s.addrs["search"],
			SchemaAddr:     s.addrs["schema"],
			MaxUploadBytes: 64 << 20,
			RequestTimeout: 30 * time.Second,
		})
	}()
	stop := func() {
		cancel()
		if err := <-gwDone; err != nil {
			fmt.Fprintf(os.Stderr, "e2e: gateway stopped: %v\n", err)
		}
		stopProcs()
		pool.Close()
		os.RemoveAll(tempDir)
	}
	return s, stop, nil
}

// commonEnv is the environment every service process of the stack gets:
// the database, NATS, every service's address and JSON logs at info level
// (tests follow trace ids through them).
func (s *stack) commonEnv() []string {
	return []string{
		"DATABASE_URL=" + s.dbURL,
		"NATS_URL=" + s.natsURL,
		"DOCREPO_MIGRATE=true",
		"DOCREPO_LOG_LEVEL=info",
		"DOCREPO_LOG_FORMAT=json",
		"DOCREPO_DOCUMENT_ADDR=" + s.addrs["document"],
		"DOCREPO_FOLDER_ADDR=" + s.addrs["folder"],
		"DOCREPO_SEARCH_ADDR=" + s.addrs["search"],
		"DOCREPO_SCHEMA_ADDR=" + s.addrs["schema"],
	}
}

// startExtra starts one more process of a stack binary for a test, with the
// stack's common environment, a fresh gRPC address and extra, and stops it
// when the test ends. It returns the process's gRPC address once it
// listens.
func startExtra(t *testing.T, name string, extra ...string) string {
	t.Helper()
	addr, err := launcher.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	env := append(stk.commonEnv(), "DOCREPO_LOG_LEVEL=warn")
	startProcess(t, name, addr, append(env, extra...)...)
	return addr
}

// startProcess starts a stack binary for a test with env (later entries
// win) listening on addr, waits until it listens, and stops it when the
// test ends.
func startProcess(t *testing.T, name, addr string, env ...string) {
	t.Helper()
	metrics, err := launcher.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	env = append(env, "DOCREPO_GRPC_ADDR="+addr, "DOCREPO_METRICS_ADDR="+metrics)
	p, err := launcher.Start(launcher.Spec{Name: name, Path: binaries[name], Env: env, Output: os.Stderr, Prefix: name + "(" + t.Name() + ") | "})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	})
	if err := launcher.WaitTCP(context.Background(), p, addr, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

var userSeq atomic.Int64

// uniq returns a name unique within this test run.
func uniq(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e6, userSeq.Add(1))
}

// client is an API caller with one token.
type client struct {
	t        testing.TB
	token    string
	username string
	keyID    int64
}

// allScopes is every public scope.
var allScopes = []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite, auth.ScopeSearch}

// newUser creates a user in the given groups (created when missing) with a
// key holding scopes (all public scopes when none are given).
func newUser(t testing.TB, groups []string, scopes ...string) *client {
	t.Helper()
	if len(scopes) == 0 {
		scopes = allScopes
	}
	name := uniq("user")
	ctx := context.Background()
	if _, err := stk.identity.CreateUser(ctx, name, groups); err != nil {
		t.Fatalf("create user: %v", err)
	}
	token, key, err := stk.identity.CreateKey(ctx, name, scopes, 0)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	return &client{t: t, token: token, username: name, keyID: key.ID}
}

// newService returns a client holding a new service credential with
// scopes (internal, admin): what docrepo's own processes and operators'
// tools call the services with.
func newService(t testing.TB, scopes ...string) *client {
	t.Helper()
	name := uniq("svc")
	token, cred, err := stk.identity.CreateServiceCredential(context.Background(), name, scopes, 0)
	if err != nil {
		t.Fatalf("create service credential: %v", err)
	}
	return &client{t: t, token: token, username: "service:" + name, keyID: cred.ID}
}

// withKey returns a client for the same user with a new key of scopes.
func (c *client) withKey(scopes ...string) *client {
	c.t.Helper()
	token, key, err := stk.identity.CreateKey(context.Background(), c.username, scopes, 0)
	if err != nil {
		c.t.Fatalf("create key: %v", err)
	}
	return &client{t: c.t, token: token, username: c.username, keyID: key.ID}
}

// response is a finished HTTP exchange.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test on error.
func (r *response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Detail is the detail of an error body.
func (r *response) Detail(t testing.TB) string {
	t.Helper()
	var e struct {
		Detail *string `json:"detail"`
	}
	r.JSON(t, &e)
	if e.Detail == nil {
		t.Fatalf("error body without detail: %s", r.Body)
	}
	return *e.Detail
}

// do sends a request; body may be nil, []byte/string (sent raw) or a value
// sent as JSON.
func (c *client) do(method, path string, body any, headers ...string) *response {
	c.t.Helper()
	return doRequest(c.t, c.token, method, path, body, headers...)
}

func doRequest(t testing.TB, token, method, path string, body any, headers ...string) *response {
	t.Helper()
	return doRequestTo(t, stk.baseURL, token, method, path, body, headers...)
}

// doRequestTo is doRequest against the gateway at base (a test's own
// stack, or the shared one).
func doRequestTo(t testing.TB, base, token, method, path string, body any, headers ...string) *response {
	t.Helper()
	var rd io.Reader
	contentType := ""
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
		contentType = "application/json"
	case string:
		rd = strings.NewReader(b)
		contentType = "application/json"
	case *multipartPayload:
		rd = b
		contentType = b.contentType
	case io.Reader:
		rd = b
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("encode body: %v", err)
		}
		rd = bytes.NewReader(data)
		contentType = "application/json"
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	validateResponse(t, req, resp.StatusCode, resp.Header, data) // openapi_test.go
	return &response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// expect fails the test unless r has the status (and, when given, detail).
func expect(t testing.TB, r *response, status int, detail ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d; body %s", r.Status, status, r.Body)
	}
	if status >= 400 {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("error Content-Type = %q, want application/json", ct)
		}
		d := r.Detail(t)
		if len(detail) > 0 && d != detail[0] {
			t.Fatalf("detail = %q, want %q", d, detail[0])
		}
	}
}
