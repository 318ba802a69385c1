// Command devstack runs docrepo's whole split stack on one machine for
// development (`make run`): Postgres from DATABASE_URL or a private cluster
// from the system's binaries, NATS JetStream (bin/devnats, its stream on
// disk), and each service as its own process from bin/, with the gateway
// on DOCREPO_HTTP_ADDR (default 127.0.0.1:8080). Blobs go to local disk
// unless MINIO_ENDPOINT is set; search uses the embedded engine unless
// OPENSEARCH_URL is set (then a separate indexer process runs too).
//
// The processes run under a supervisor (pkg/launcher) like under a
// process manager: one that dies is logged and started again with a
// back-off, the others keep serving, and each one's pid is in
// .data/pids/<name>.pid. Only Ctrl-C (or SIGTERM) stops the stack: every
// process, then the private cluster.
//
// The write path (gateway, document, folder, schema) runs
// DOCREPO_DEV_WRITE_NICE (default 2) nice steps below the search process,
// so that a bulk upload that fills the CPU slows itself down rather than
// the indexer and the searches (docs/design.md §7); the embedded engine
// gathers batches for 20 ms before writing a segment
// (DOCREPO_INDEX_PERSIST_NAP, unless set).
//
// It bootstraps an `admin` user with a full-scope key and writes
// DOCREPO_URL, DATABASE_URL and DOCREPO_ADMIN_TOKEN to .data/devstack.env.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/launcher"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}

type settings struct {
	databaseURL string
	httpAddr    string
	dataDir     string
	binDir      string
	pgPort      int
	natsPort    int
	basePort    int
	pprof       bool
	writeNice   int
}

// devPersistNap is the embedded engine's persister nap under devstack.
const devPersistNap = "20ms"

// writePath are the processes an upload goes through before the index:
// devstack runs them at a lower CPU priority (settings.writeNice).
var writePath = map[string]bool{"gateway": true, "document": true, "folder": true, "schema": true}

func run(ctx context.Context, args []string, getenv func(string) string) error {
	var s settings
	l := config.New("devstack", getenv)
	l.String(&s.databaseURL, "database-url", "DATABASE_URL", "", "Postgres URL (empty: a private cluster under the data dir)")
	l.String(&s.httpAddr, "http-addr", "DOCREPO_HTTP_ADDR", "127.0.0.1:8080", "gateway listen address")
	l.String(&s.dataDir, "data-dir", "DOCREPO_DATA_DIR", ".data", "where the stack keeps its state")
	l.String(&s.binDir, "bin-dir", "DOCREPO_BIN_DIR", "bin", "where the service binaries are")
	l.Int(&s.pgPort, "pg-port", "DOCREPO_PG_PORT", 55432, "port of the private Postgres cluster")
	l.Int(&s.natsPort, "nats-port", "DOCREPO_NATS_PORT", 14222, "port of the embedded NATS server")
	l.Int(&s.basePort, "base-port", "DOCREPO_BASE_PORT", 9100, "first of the service ports (gRPC base+1.., metrics base+11.., pprof base+21..)")
	l.Bool(&s.pprof, "pprof", "DOCREPO_DEV_PPROF", false, "serve each process's pprof profiles on base+21.. (gateway base+26)")
	l.Int(&s.writeNice, "write-nice", "DOCREPO_DEV_WRITE_NICE", 2,
		"CPU priority steps below the search process (index and queries) for gateway, document, folder and schema (0: equal)")
	if err := l.Parse(args); err != nil {
		return err
	}
	dataDir, err := filepath.Abs(s.dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}

	// Postgres.
	dbURL := s.databaseURL
	if dbURL == "" {
		serverURL, stopPG, err := privatePostgres(ctx, filepath.Join(dataDir, "pg"), s.pgPort)
		if err != nil {
			return err
		}
		defer stopPG()
		if dbURL, err = ensureDatabase(ctx, serverURL, "docrepo"); err != nil {
			return err
		}
	}
	// The identity tables hold the tokens bootstrapped below; every
	// service migrates its own tables when it starts.
	pool, err := database.Open(ctx, dbURL, "")
	if err != nil {
		return err
	}
	if _, err := database.Migrate(ctx, pool, identity.Migrations); err != nil {
		pool.Close()
		return err
	}
	adminToken, serviceToken, err := bootstrapIdentity(ctx, identity.NewStore(pool), dataDir)
	pool.Close()
	if err != nil {
		return err
	}

	// Every process of the stack runs under one supervisor: one that dies is
	// started again, the others keep serving; only Ctrl-C stops them.
	sup := &launcher.Supervisor{Log: os.Stderr, PidDir: filepath.Join(dataDir, "pids")}
	defer sup.Stop(30 * time.Second)
	out := &launcher.LockedWriter{W: os.Stderr}
	start := func(name string, env []string) error {
		bin := filepath.Join(s.binDir, name)
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%s is not built (%s missing): run make build", name, bin)
		}
		spec := launcher.Spec{Name: name, Path: bin, Env: env, Output: out, Prefix: fmt.Sprintf("%-9s| ", name)}
		if writePath[name] {
			spec.Nice = s.writeNice
		}
		return sup.Start(spec)
	}

	// NATS JetStream: a child like the others, its stream on disk.
	natsAddr := fmt.Sprintf("127.0.0.1:%d", s.natsPort)
	if err := start("devnats", []string{"DOCREPO_NATS_ADDR=" + natsAddr, "DOCREPO_NATS_STORE=" + filepath.Join(dataDir, "nats")}); err != nil {
		return err
	}
	if err := waitTCP(ctx, natsAddr, 30*time.Second); err != nil {
		return fmt.Errorf("nats: %w", err)
	}
	natsURL := "nats://" + natsAddr

	port := func(n int) string { return fmt.Sprintf("127.0.0.1:%d", s.basePort+n) }
	addrs := map[string]string{"document": port(1), "folder": port(2), "search": port(3), "schema": port(4), "indexer": port(5)}
	common := []string{
		"DATABASE_URL=" + dbURL,
		"NATS_URL=" + natsURL,
		"DOCREPO_LOG_FORMAT=text",
		"DOCREPO_MIGRATE=true",
		"DOCREPO_SERVICE_TOKEN=" + serviceToken,
		"DOCREPO_DOCUMENT_ADDR=" + addrs["document"],
		"DOCREPO_FOLDER_ADDR=" + addrs["folder"],
		"DOCREPO_SEARCH_ADDR=" + addrs["search"],
		"DOCREPO_SCHEMA_ADDR=" + addrs["schema"],
		"DOCREPO_BLOB_DIR=" + filepath.Join(dataDir, "blobs"),
		"DOCREPO_INDEX_DIR=" + filepath.Join(dataDir, "index"),
	}
	for _, k := range []string{"MINIO_ENDPOINT", "MINIO_ACCESS_KEY", "MINIO_SECRET_KEY", "MINIO_BUCKET", "MINIO_USE_SSL",
		"OPENSEARCH_URL", "OPENSEARCH_USERNAME", "OPENSEARCH_PASSWORD", "OPENSEARCH_INSECURE", "OPENSEARCH_INDEX", "DOCREPO_EMBEDDER", "DOCREPO_MAX_UPLOAD_BYTES", "DOCREPO_LOG_LEVEL"} {
		if v := getenv(k); v != "" {
			common = append(common, k+"="+v)
		}
	}
	type proc struct{ name, grpc, metrics, pprof string }
	procs := []proc{
		{"folder", addrs["folder"], port(12), port(22)},
		{"schema", addrs["schema"], port(14), port(24)},
		{"document", addrs["document"], port(11), port(21)},
		{"search", addrs["search"], port(13), port(23)},
	}
	if getenv("OPENSEARCH_URL") != "" {
		procs = append(procs, proc{"indexer", addrs["indexer"], port(15), port(25)})
	}
	profiles := func(env []string, addr string) []string {
		if !s.pprof {
			return env
		}
		fmt.Fprintf(os.Stderr, "devstack: profiles at http://%s/debug/pprof/\n", addr)
		return append(env, "DOCREPO_PPROF_ADDR="+addr)
	}
	for _, p := range procs {
		env := append(append([]string{}, common...), "DOCREPO_GRPC_ADDR="+p.grpc, "DOCREPO_METRICS_ADDR="+p.metrics)
		if p.name == "search" && getenv("DOCREPO_INDEX_PERSIST_NAP") == "" {
			// One machine for everything: the embedded engine gathers
			// 20 ms of batches into one segment, less CPU per document
			// for at most 20 ms more lag (docs/design.md §7).
			env = append(env, "DOCREPO_INDEX_PERSIST_NAP="+devPersistNap)
		}
		if err := start(p.name, profiles(env, p.pprof)); err != nil {
			return err
		}
	}
	if err := start("gateway", profiles(append(append([]string{}, common...), "DOCREPO_HTTP_ADDR="+s.httpAddr), port(26))); err != nil {
		return err
	}
	baseURL := "http://" + s.httpAddr
	envFile := filepath.Join(dataDir, "devstack.env")
	// The addresses let docrepoctl (e.g. reindex) reach the services.
	envContent := fmt.Sprintf("DOCREPO_URL=%s\nDATABASE_URL=%s\nDOCREPO_ADMIN_TOKEN=%s\nDOCREPO_SEARCH_ADDR=%s\n",
		baseURL, dbURL, adminToken, addrs["search"])
	if getenv("OPENSEARCH_URL") != "" {
		envContent += "DOCREPO_INDEXER_ADDR=" + addrs["indexer"] + "\n"
	}
	if err := os.WriteFile(envFile, []byte(envContent), 0o600); err != nil {
		return err
	}
	if err := waitHealthy(ctx, baseURL+"/healthz", 30*time.Second); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "\ndocrepo is up at %s\n  credentials: %s (source it: set -a; . %s; set +a)\n  stop: Ctrl-C\n\n", baseURL, envFile, envFile)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "devstack: stopping")
	return nil
}

// privatePostgres starts (or reuses) a cluster with deploy/dev/postgres.sh.
func privatePostgres(ctx context.Context, dir string, port int) (string, func(), error) {
	script := filepath.Join("deploy", "dev", "postgres.sh")
	out, err := exec.CommandContext(ctx, "bash", script, "ensure", dir, fmt.Sprint(port)).Output()
	if err != nil {
		return "", nil, fmt.Errorf("start private Postgres (%s): %w", script, err)
	}
	stop := func() { _ = exec.Command("bash", script, "stop", dir).Run() }
	return strings.TrimSpace(string(out)), stop, nil
}

// ensureDatabase creates database name on the server if missing.
func ensureDatabase(ctx context.Context, serverURL, name string) (string, error) {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", err
		}
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// bootstrapIdentity makes sure an admin user and a service user exist and
// returns usable tokens, reusing the ones saved by an earlier run.
func bootstrapIdentity(ctx context.Context, ids *identity.Store, dataDir string) (admin, service string, err error) {
	tokenFile := filepath.Join(dataDir, "tokens")
	saved := map[string]string{}
	if b, err := os.ReadFile(tokenFile); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				saved[k] = v
			}
		}
	}
	// A saved token is reused while it is still what it was made for (a
	// service token saved before service credentials existed became one).
	usable := func(name string, wantService bool) string {
		tok := saved[name]
		if tok == "" {
			return ""
		}
		p, err := ids.Authenticate(ctx, tok)
		if err != nil || (p.Service != "") != wantService {
			return ""
		}
		return tok
	}
	if admin = usable("admin", false); admin == "" {
		if _, err := ids.CreateUser(ctx, "admin", []string{"admin"}); err != nil && !errors.Is(err, identity.ErrExists) {
			return "", "", fmt.Errorf("bootstrap admin: %w", err)
		}
		if admin, _, err = ids.CreateKey(ctx, "admin", []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite, auth.ScopeSearch}, 0); err != nil {
			return "", "", fmt.Errorf("bootstrap admin: %w", err)
		}
	}
	if service = usable("docrepo-service", true); service == "" {
		if service, _, err = ids.CreateServiceCredential(ctx, "docrepo-service", []string{auth.ScopeInternal}, 0); err != nil {
			return "", "", fmt.Errorf("bootstrap service credential: %w", err)
		}
	}
	content := fmt.Sprintf("admin=%s\ndocrepo-service=%s\n", admin, service)
	return admin, service, os.WriteFile(tokenFile, []byte(content), 0o600)
}

// waitTCP waits until addr accepts connections.
func waitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening after %s: %w", addr, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func waitHealthy(ctx context.Context, u string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not healthy after %s", u, timeout)
}
