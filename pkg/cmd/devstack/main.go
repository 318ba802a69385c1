// Command devstack runs docrepo's whole split stack on one machine for
// development (`make run`): Postgres from DATABASE_URL or a private cluster
// from the system's binaries, NATS JetStream (bin/devnats, its stream on
// disk), and each service as its own process from bin/, with the gateway
// on DOCREPO_HTTP_ADDR (default 127.0.0.1:8080). Blobs go to local disk
// unless MINIO_ENDPOINT is set; search uses the embedded engine unless
// OPENSEARCH_URL is set (then a separate indexer process runs too).
//
// The processes, their order, environment and health waits are
// pkg/launcher's topology (launcher.Stack), the one the end-to-end tests
// start too. They run under a supervisor like under a process manager:
// one that dies is logged and started again with a back-off, the others
// keep serving, and each one's pid is in .data/pids/<name>.pid. Only Ctrl-C (or SIGTERM) stops the stack: every
// process, then the private cluster.
//
// The write path (gateway, document, folder, schema) runs
// DOCREPO_DEV_WRITE_NICE (default 2) nice steps below the search process,
// so that a bulk upload that fills the CPU slows itself down rather than
// the indexer and the searches (docs/design.md §7); the embedded engine
// gathers batches for 20 ms before writing a segment
// (DOCREPO_INDEX_PERSIST_NAP, unless set).
//
// Search embeds with the use embedder (the default) from the directory
// deploy/dev/model.sh names, which `make run` fills (DOCREPO_USE_MODEL_DIR
// overrides it); without the model the services embed with the hash
// embedder and say so in the log and /readyz. An index holding another
// embedder's vectors (a .data written with hash, or before the model
// arrived) is re-embedded online: devstack sets
// DOCREPO_EMBEDDER_CHANGE=rebuild unless it is set (refuse stops search
// from starting instead).
//
// It bootstraps an `admin` user with a full-scope key and writes
// DOCREPO_URL, DATABASE_URL and DOCREPO_ADMIN_TOKEN to .data/devstack.env.
// Like `docrepoctl bootstrap`, it gives each service a Postgres role that
// owns only its schema (pkg/dbroles) and starts each service with its own
// DATABASE_URL, so the database enforces the walls on `make run` too
// (DOCREPO_DEV_DB_ROLES=false: every service as DATABASE_URL's user).
package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/dbroles"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/launcher"
	"github.com/docrepo/docrepo/pkg/webhook"
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
	dbRoles     bool
	rolePrefix  string
}

// devPersistNap is the embedded engine's persister nap under devstack.
const devPersistNap = "20ms"

// passedOn are the settings of devstack's environment every process gets.
var passedOn = []string{"MINIO_ENDPOINT", "MINIO_ACCESS_KEY", "MINIO_SECRET_KEY", "MINIO_BUCKET", "MINIO_USE_SSL",
	"OPENSEARCH_URL", "OPENSEARCH_USERNAME", "OPENSEARCH_PASSWORD", "OPENSEARCH_INSECURE", "OPENSEARCH_INDEX",
	"DOCREPO_EMBEDDER", "DOCREPO_EMBEDDER_DIMENSIONS", "DOCREPO_EMBEDDER_CHANGE", "DOCREPO_EMBED_DEFER", "DOCREPO_USE_MODEL_DIR", "DOCREPO_USE_WEIGHT", "DOCREPO_USE_PASSAGE_PIECES",
	"DOCREPO_USE_SHORT_QUERY_WORDS", "DOCREPO_USE_SHORT_QUERY_WEIGHT", "DOCREPO_USE_QUERY_WEIGHT", "DOCREPO_USE_QUERY_IDF", "DOCREPO_USE_UNMATCHED_WEIGHT",
	"DOCREPO_USE_GLOVE_DIR", "DOCREPO_USE_GLOVE_WEIGHT", "DOCREPO_USE_QUERY_GLOVE_WEIGHT", "DOCREPO_USE_SHORT_QUERY_GLOVE_WEIGHT", "DOCREPO_USE_RERANK_WEIGHT", "DOCREPO_USE_RERANK_DEPTH", "DOCREPO_USE_RERANK_SCORE",
	"DOCREPO_USE_QUERY_MEAN_SHIFT", "DOCREPO_USE_WORDNET_DIR", "DOCREPO_USE_SYNONYM_QUERY_WORDS", "DOCREPO_USE_SYNONYM_SENSES", "DOCREPO_USE_SYNONYM_PERTAINYMS", "DOCREPO_USE_SYNONYM_LEXICAL_WEIGHT",
	"DOCREPO_USE_SYNONYM_GLOVE_WEIGHT", "DOCREPO_USE_SYNONYM_RERANK_WEIGHT",
	"DOCREPO_MAX_UPLOAD_BYTES", "DOCREPO_LOG_LEVEL", "DOCREPO_WEBHOOK_KEY", "DOCREPO_WEBHOOK_OLD_KEYS"}

// modelScript prints the sentence encoder's directory (`make run` has
// fetched it, or said why not); relative to the repository, where make
// runs devstack.
const modelScript = "deploy/dev/model.sh"

// useModelDir is the use embedder's model directory for the stack:
// DOCREPO_USE_MODEL_DIR when set, else the one deploy/dev/model.sh
// names when it holds the model; "" otherwise (the services then embed
// with the hash embedder and say why).
func useModelDir(getenv func(string) string, script string) string {
	if v := getenv("DOCREPO_USE_MODEL_DIR"); v != "" {
		return v
	}
	out, err := exec.Command(script, "dir").Output()
	if err != nil {
		return ""
	}
	dir := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, "model.json")); err != nil {
		return ""
	}
	return dir
}

// run starts the stack and keeps it running until ctx ends: Postgres, the
// identity bootstrap, the topology of pkg/launcher, the env file.
func run(ctx context.Context, args []string, getenv func(string) string) error {
	s, err := parseSettings(args, getenv)
	if err != nil {
		return err
	}
	dataDir, err := filepath.Abs(s.dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	dbURL, stopPG, err := openDatabase(ctx, s, dataDir)
	if err != nil {
		return err
	}
	defer stopPG()
	adminToken, serviceToken, err := bootstrap(ctx, dbURL, dataDir)
	if err != nil {
		return err
	}
	stack := newStack(s, getenv, dataDir, dbURL, serviceToken)
	if getenv("DOCREPO_WEBHOOK_KEY") == "" {
		key, err := webhookKey(filepath.Join(dataDir, "webhook.key"))
		if err != nil {
			return err
		}
		stack.ServiceEnv["document"] = append(stack.ServiceEnv["document"], "DOCREPO_WEBHOOK_KEY="+key)
	}
	if s.dbRoles {
		if stack.DatabaseURLs, err = serviceRoles(ctx, dbURL, s.rolePrefix, dataDir); err != nil {
			return err
		}
	}
	// Every process runs supervised: one that dies is started again, the
	// others keep serving; only Ctrl-C stops them.
	defer stack.Stop(30 * time.Second)
	if err := stack.Start(ctx); err != nil {
		return err
	}
	envFile := filepath.Join(dataDir, "devstack.env")
	if err := writeEnvFile(envFile, stack, dbURL, adminToken); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "\ndocrepo is up at %s\n  credentials: %s (source it: set -a; . %s; set +a)\n  stop: Ctrl-C\n\n", stack.URL(), envFile, envFile)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "devstack: stopping")
	return nil
}

func parseSettings(args []string, getenv func(string) string) (settings, error) {
	var s settings
	l := config.New("devstack", getenv)
	l.RegisterDatabaseURL(&s.databaseURL)
	l.RegisterGatewayAddr(&s.httpAddr)
	l.String(&s.dataDir, "data-dir", "DOCREPO_DATA_DIR", ".data", "where the stack keeps its state")
	l.String(&s.binDir, "bin-dir", "DOCREPO_BIN_DIR", "bin", "where the service binaries are")
	l.Int(&s.pgPort, "pg-port", "DOCREPO_PG_PORT", 55432, "port of the private Postgres cluster")
	l.Int(&s.natsPort, "nats-port", "DOCREPO_NATS_PORT", 14222, "port of the embedded NATS server")
	l.Int(&s.basePort, "base-port", "DOCREPO_BASE_PORT", 9100, "first of the service ports (gRPC base+1.., metrics base+11.., pprof base+21..)")
	l.Bool(&s.pprof, "pprof", "DOCREPO_DEV_PPROF", false, "serve each process's pprof profiles on base+21.. (gateway base+26)")
	l.Bool(&s.dbRoles, "db-roles", "DOCREPO_DEV_DB_ROLES", true, "run each service as its own Postgres role, owner of its schema only (docrepoctl bootstrap's roles); false: every service as DATABASE_URL's user")
	l.RegisterDBRolePrefix(&s.rolePrefix)
	l.Int(&s.writeNice, "write-nice", "DOCREPO_DEV_WRITE_NICE", 2,
		"CPU priority steps below the search process (index and queries) for gateway, document, folder and schema (0: equal)")
	return s, l.Parse(args)
}

// openDatabase returns the stack's database: DATABASE_URL, or database
// docrepo of a private cluster under the data dir (stopped by the
// returned function).
func openDatabase(ctx context.Context, s settings, dataDir string) (string, func(), error) {
	if s.databaseURL != "" {
		return s.databaseURL, func() {}, nil
	}
	serverURL, stopPG, err := privatePostgres(ctx, filepath.Join(dataDir, "pg"), s.pgPort)
	if err != nil {
		return "", nil, err
	}
	dbURL, err := ensureDatabase(ctx, serverURL, "docrepo")
	if err != nil {
		stopPG()
		return "", nil, err
	}
	return dbURL, stopPG, nil
}

// bootstrap migrates the identity tables (every service migrates its own
// when it starts) and returns the admin's and the services' tokens.
func bootstrap(ctx context.Context, dbURL, dataDir string) (admin, service string, err error) {
	pool, err := database.Open(ctx, dbURL, "")
	if err != nil {
		return "", "", err
	}
	defer pool.Close()
	if _, err := database.Migrate(ctx, pool, identity.Migrations); err != nil {
		return "", "", err
	}
	return bootstrapIdentity(ctx, identity.NewStore(pool), dataDir)
}

// serviceRoles makes sure every service has its Postgres role and returns
// their DATABASE_URLs, reusing the ones an earlier run saved in the data
// dir while they log in.
func serviceRoles(ctx context.Context, dbURL, prefix, dataDir string) (map[string]string, error) {
	file := filepath.Join(dataDir, "database-roles")
	saved := map[string]string{}
	if b, err := os.ReadFile(file); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				saved[k] = v
			}
		}
	}
	res, err := dbroles.Ensure(ctx, dbURL, dbroles.Options{Prefix: prefix, URLs: saved})
	if err != nil {
		return nil, fmt.Errorf("%w (DOCREPO_DEV_DB_ROLES=false runs every service as DATABASE_URL's user)", err)
	}
	var b strings.Builder
	for _, name := range dbroles.Names() {
		fmt.Fprintf(&b, "%s=%s\n", name, res.URLs[name])
	}
	return res.URLs, os.WriteFile(file, []byte(b.String()), 0o600)
}

// newStack is `make run`'s stack: fixed ports, binaries from bin/, files
// under the data dir, supervised processes, the write path at a lower CPU
// priority, text logs.
func newStack(s settings, getenv func(string) string, dataDir, dbURL, serviceToken string) *launcher.Stack {
	bins := map[string]string{}
	for _, sv := range launcher.Services {
		bins[sv.Name] = filepath.Join(s.binDir, sv.Name)
	}
	env := []string{"DOCREPO_LOG_FORMAT=text"}
	for _, k := range passedOn {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	if getenv("DOCREPO_USE_MODEL_DIR") == "" {
		if dir := useModelDir(getenv, modelScript); dir != "" {
			env = append(env, "DOCREPO_USE_MODEL_DIR="+dir)
		}
	}
	if getenv("DOCREPO_EMBEDDER_CHANGE") == "" {
		// A development index follows the stack's embedder: the model
		// arriving after a start on the hash fallback, or a .data of an
		// older make run, re-embeds it online rather than stopping search.
		env = append(env, "DOCREPO_EMBEDDER_CHANGE=rebuild")
	}
	serviceEnv := map[string][]string{}
	if getenv("DOCREPO_INDEX_PERSIST_NAP") == "" {
		// One machine for everything: the embedded engine gathers 20 ms
		// of batches into one segment, less CPU per document for at most
		// 20 ms more lag (docs/design.md §7).
		serviceEnv["search"] = []string{"DOCREPO_INDEX_PERSIST_NAP=" + devPersistNap}
	}
	return &launcher.Stack{
		Binaries: bins, DatabaseURL: dbURL, ServiceToken: serviceToken, DataDir: dataDir,
		HTTPAddr: s.httpAddr, NATSAddr: fmt.Sprintf("127.0.0.1:%d", s.natsPort), BasePort: s.basePort, Pprof: s.pprof,
		Env: env, ServiceEnv: serviceEnv, WriteNice: s.writeNice,
		Supervise: true, PidDir: filepath.Join(dataDir, "pids"),
		Output: &launcher.LockedWriter{W: os.Stderr}, PrefixLines: true, Log: os.Stderr,
	}
}

// writeEnvFile writes what a shell needs to use the stack: its URL, the
// database, the admin token and the addresses docrepoctl reaches the
// services at (reindex, ocr status, lock list).
func writeEnvFile(path string, stack *launcher.Stack, dbURL, adminToken string) error {
	listen := func(name string) string { return stack.Addr(name).Listen }
	content := envFileContent(stack.URL(), dbURL, adminToken, listen, stack.Addr("search").Metrics, stack.Runs("indexer"))
	return os.WriteFile(path, []byte(content), 0o600)
}

// envFileContent is the env file's text. With the embedded engine the
// indexer runs inside the search process, so DOCREPO_INDEXER_ADDR names
// search's address (docrepoctl's default, 127.0.0.1:9105, is nobody's).
func envFileContent(url, dbURL, adminToken string, listen func(string) string, searchMetrics string, indexerRuns bool) string {
	indexer := listen("search")
	if indexerRuns {
		indexer = listen("indexer")
	}
	return fmt.Sprintf("DOCREPO_URL=%s\nDATABASE_URL=%s\nDOCREPO_ADMIN_TOKEN=%s\nDOCREPO_DOCUMENT_ADDR=%s\nDOCREPO_SEARCH_ADDR=%s\nDOCREPO_SEARCH_METRICS_ADDR=%s\nDOCREPO_INDEXER_ADDR=%s\n",
		url, dbURL, adminToken, listen("document"), listen("search"), searchMetrics, indexer)
}

// privatePostgres starts (or reuses) a cluster with deploy/dev/postgres.sh.
func privatePostgres(ctx context.Context, dir string, port int) (string, func(), error) {
	script := filepath.Join("deploy", "dev", "postgres.sh")
	cmd := exec.CommandContext(ctx, "bash", script, "ensure", dir, fmt.Sprint(port))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "is taken") {
			msg += fmt.Sprintf(" (choose another port with DOCREPO_PG_PORT or -pg-port; %d is the default)", port)
		}
		return "", nil, fmt.Errorf("start private Postgres (%s): %w: %s", script, err, msg)
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
	// service token saved before service credentials existed became one;
	// an admin key saved before it held every user scope did not).
	usable := func(name string, wantService bool, scopes []string) string {
		tok := saved[name]
		if tok == "" {
			return ""
		}
		p, err := ids.Authenticate(ctx, tok)
		if err != nil || (p.Service != "") != wantService {
			return ""
		}
		for _, sc := range scopes {
			if !slices.Contains(p.Scopes, sc) {
				return ""
			}
		}
		return tok
	}
	// The admin key holds every user scope, audit and webhooks included,
	// so that the whole API (docs/api.md §10) works with it on make run.
	if admin = usable("admin", false, auth.UserScopes); admin == "" {
		if _, err := ids.CreateUser(ctx, "admin", []string{"admin"}); err != nil && !errors.Is(err, identity.ErrExists) {
			return "", "", fmt.Errorf("bootstrap admin: %w", err)
		}
		if admin, _, err = ids.CreateKey(ctx, "admin", slices.Clone(auth.UserScopes), 0); err != nil {
			return "", "", fmt.Errorf("bootstrap admin: %w", err)
		}
	}
	if service = usable("docrepo-service", true, nil); service == "" {
		if service, _, err = ids.CreateServiceCredential(ctx, "docrepo-service", []string{auth.ScopeInternal}, 0); err != nil {
			return "", "", fmt.Errorf("bootstrap service credential: %w", err)
		}
	}
	content := fmt.Sprintf("admin=%s\ndocrepo-service=%s\n", admin, service)
	return admin, service, os.WriteFile(tokenFile, []byte(content), 0o600)
}

// webhookKey is the development stack's webhook secret key
// (DOCREPO_WEBHOOK_KEY): the one saved in file, else a new one saved
// there, so that webhooks work under make run and their secrets stay
// sealed under the same key from one start to the next.
func webhookKey(file string) (string, error) {
	if b, err := os.ReadFile(file); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	key := webhook.NewKey()
	return key, os.WriteFile(file, []byte(key+"\n"), 0o600)
}
