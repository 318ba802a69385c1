package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/catalog"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/dbroles"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/launcher"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
	"github.com/docrepo/docrepo/pkg/webhook"
)

// stack is the running system under test: the topology `make run`
// starts (launcher.Stack), on a fresh database and an in-process NATS.
type stack struct {
	*launcher.Stack
	baseURL  string
	dbURL    string
	pool     *pgxpool.Pool
	identity *identity.Store
	addrs    map[string]string // gRPC address of every service
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
	// Roles are dropped after their database (which holds what they own).
	defer func() {
		drop()
		if rolePrefix != "" {
			dropRoles(rolePrefix)
		}
	}()
	// Each service connects as its own Postgres role, owner of its schema
	// only, as docrepoctl bootstrap and make run set them up: the suite
	// runs against the walls the database enforces. Roles are global to
	// the server: this run's have a prefix of their own, dropped after
	// the database.
	rolePrefix = fmt.Sprintf("e2e%d_", time.Now().UnixNano()%1e9)
	roles, err := dbroles.Ensure(ctx, dbURL, dbroles.Options{Prefix: rolePrefix})
	if err != nil {
		fmt.Println("e2e: database roles:", err)
		return 1
	}
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
	s, stop, err := startStack(ctx, dbURL, roles.URLs, ns.ClientURL())
	if err != nil {
		fmt.Println("e2e: start stack:", err)
		return 1
	}
	stk = s
	code := m.Run()
	stop()
	return code
}

// rolePrefix is the prefix of this run's service roles (dbroles).
var rolePrefix string

// dropRoles drops the services' roles of prefix (after their database).
func dropRoles(prefix string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.ServerURL())
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	for _, s := range dbroles.Services {
		_, _ = conn.Exec(ctx, `DROP ROLE IF EXISTS `+pgx.Identifier{dbroles.Role(prefix, s.Name)}.Sanitize())
	}
}

// binaries are the stack's commands, built once per test run.
var binaries map[string]string

// blobDir is the blob directory of the stack's document service, so that
// tests can check what is stored.
var blobDir string

// docMaxUpload is the upload limit of the stack (gateway and document
// service).
const docMaxUpload = 64 << 20

// startStack builds the topology's binaries and starts each as its own
// process, as `make run` does (pkg/launcher's Services), configured only
// through its environment, with JSON logs at info level captured for the
// tests (e.g. to follow a trace id). It returns a function that stops
// them all.
func startStack(ctx context.Context, dbURL string, serviceURLs map[string]string, natsURL string) (*stack, func(), error) {
	root, err := launcher.RepoRoot(".")
	if err != nil {
		return nil, nil, err
	}
	tempDir, err := os.MkdirTemp("", "docrepo-e2e-")
	if err != nil {
		return nil, nil, err
	}
	// Tests read the services' tables (qualified by schema) and write doc
	// types and templates as docrepoctl does, in the schema service's schema.
	pool, err := database.Open(ctx, dbURL, catalog.Schema)
	if err != nil {
		os.RemoveAll(tempDir)
		return nil, nil, err
	}
	s := &stack{dbURL: dbURL, pool: pool, identity: identity.NewStore(pool), addrs: map[string]string{}, running: map[string]bool{}}
	fail := func(err error) (*stack, func(), error) {
		pool.Close()
		os.RemoveAll(tempDir)
		return nil, nil, err
	}
	token, _, err := s.identity.CreateServiceCredential(ctx, "docrepo-service", []string{auth.ScopeInternal}, 0)
	if err != nil {
		return fail(err)
	}
	s.Stack = suiteStack(dbURL, natsURL, token, tempDir)
	s.DatabaseURLs = serviceURLs
	var names []string
	for _, sv := range launcher.Services {
		if s.Runs(sv.Name) {
			names = append(names, sv.Name)
		}
	}
	if binaries, err = launcher.Build(ctx, root, filepath.Join(tempDir, "bin"), names...); err != nil {
		return fail(err)
	}
	s.Binaries = binaries
	blobDir = s.BlobDir()
	if err := s.Start(ctx); err != nil {
		return fail(err)
	}
	s.baseURL = s.URL()
	for _, sv := range launcher.Services {
		s.addrs[sv.Name] = s.Addr(sv.Name).Listen
		s.running[sv.Name] = s.Runs(sv.Name)
	}
	stop := func() {
		s.Stop(30 * time.Second)
		pool.Close()
		os.RemoveAll(tempDir)
	}
	return s, stop, nil
}

// suiteStack is the suite's stack: JSON logs at info level, captured for
// the tests (e.g. to follow a trace id) and shown on stderr with
// DOCREPO_E2E_LOG=1; a 64 MiB upload limit; OpenSearch when
// OPENSEARCH_URL is set.
func suiteStack(dbURL, natsURL, token, dataDir string) *launcher.Stack {
	var logOut io.Writer = &logs
	if os.Getenv("DOCREPO_E2E_LOG") != "" {
		logOut = io.MultiWriter(&logs, os.Stderr)
	}
	return &launcher.Stack{
		DatabaseURL: dbURL, NATSURL: natsURL, ServiceToken: token, DataDir: dataDir,
		Env: append([]string{"DOCREPO_LOG_LEVEL=info", "DOCREPO_LOG_FORMAT=json",
			fmt.Sprintf("DOCREPO_MAX_UPLOAD_BYTES=%d", docMaxUpload), "DOCREPO_REQUEST_TIMEOUT=30s",
			// Every test calls from 127.0.0.1, many with bad tokens on
			// purpose: the gateway's limit of failed authentications per
			// address is tested on a gateway of its own (auth_edge_test.go).
			"DOCREPO_AUTH_FAILURE_RATE=1000000", "DOCREPO_AUTH_FAILURE_BURST=1000000",
			// Every document service of the suite (variants included, which
			// share the database and its subscriptions) seals and opens
			// the webhook secrets with one key.
			"DOCREPO_WEBHOOK_KEY=" + webhook.NewKey()}, openSearchEnv()...),
		// Vectors follow the text in a stage of their own, as with a slow
		// embedder (the default does so for local and openai only), so
		// that the suite holds to waiting for them (waitVectors).
		ServiceEnv: map[string][]string{"search": {"DOCREPO_INDEX_CONSUMER=e2e-" + uniq("search"), "DOCREPO_EMBED_DEFER=on"},
			// Webhook receivers are httptest servers on 127.0.0.1, and
			// retries come within the test's patience.
			"document": {"DOCREPO_WEBHOOK_ALLOW_PRIVATE=true", "DOCREPO_WEBHOOK_BACKOFF=100ms",
				"DOCREPO_WEBHOOK_BACKOFF_MAX=1s", "DOCREPO_WEBHOOK_POLL=100ms",
				// A delivery dies (and pauses its webhook) within a test.
				"DOCREPO_WEBHOOK_RETRY_PERIOD=10s"}},
		Output: logOut,
	}
}

// commonEnv is the environment every process of the stack gets.
func (s *stack) commonEnv() []string { return s.CommonEnv() }

// startVariant starts a variant of the shared stack for one test: the
// services in only, with env after the stack's environment, calling the
// shared stack's other services. It stops when the test ends.
func startVariant(t *testing.T, only []string, env ...string) *launcher.Stack {
	t.Helper()
	return startVariantCalling(t, only, nil, env...)
}

// startVariantCalling is startVariant with the services in calls reached
// at the given addresses instead of the shared stack's (a gateway in front
// of a test's own search service).
func startVariantCalling(t *testing.T, only []string, calls map[string]string, env ...string) *launcher.Stack {
	t.Helper()
	v := variantStack(only, calls, env...)
	startTestStack(t, v)
	return v
}

// variantStack is a variant of the shared stack, not started yet: the
// services in only, with env after the stack's environment, calling the
// shared stack's other services (those in calls at the given addresses).
// Every variant is made here: a variant's document service sends the
// shared database's webhook deliveries too, so it must do so with the
// suite's webhook settings, not the defaults (a 24 h retry period, 10 s
// first back-off doubling to an hour, no private receivers). One with the
// defaults (TestPurgeFinishesAfterKill's, made apart) claimed the pause
// test's delivery, failed it on the loopback receiver and put its next
// attempt minutes away (10 s doubled per earlier attempt), so the
// delivery stayed pending instead of dying within the test.
func variantStack(only []string, calls map[string]string, env ...string) *launcher.Stack {
	ext := map[string]string{}
	for name, addr := range stk.addrs {
		if !slices.Contains(only, name) {
			ext[name] = addr
		}
	}
	for name, addr := range calls {
		ext[name] = addr
	}
	return &launcher.Stack{DatabaseURL: stk.dbURL, DatabaseURLs: stk.DatabaseURLs, NATSURL: stk.NATSURL, ServiceToken: stk.ServiceToken,
		Only: only, External: ext, Env: append(append(slices.Clone(stk.Env), "DOCREPO_LOG_LEVEL=warn"), env...),
		ServiceEnv: map[string][]string{"document": stk.ServiceEnv["document"]}}
}

// startTestStack starts a stack of the run's binaries for one test, its
// files in a directory of the test (unless DataDir is set), its output on
// stderr; it stops when the test ends.
func startTestStack(t *testing.T, s *launcher.Stack) {
	t.Helper()
	s.Binaries = binaries
	if s.DataDir == "" {
		s.DataDir = t.TempDir()
	}
	s.Output, s.PrefixLines = os.Stderr, true
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(30 * time.Second) })
}

// startExtra starts one more process of the named service for a test (a
// variant of the shared stack's) and returns its address.
func startExtra(t *testing.T, name string, env ...string) string {
	t.Helper()
	return startVariant(t, []string{name}, env...).Addr(name).Listen
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
var allScopes = auth.UserScopes

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
	length := int64(0) // unknown unless sized
	switch b := body.(type) {
	case nil:
	case sizedBody:
		rd, length = b.Reader, b.size
		if p, ok := b.Reader.(*multipartPayload); ok {
			contentType = p.contentType
		}
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
	if length > 0 {
		req.ContentLength = length
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

// sizedBody is a request body sent with a Content-Length (size > 0) or,
// size -1, chunked.
type sizedBody struct {
	io.Reader
	size int64
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
