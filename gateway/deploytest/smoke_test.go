package deploytest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/dbroles"
	"github.com/docrepo/docrepo/pkg/launcher"
	"github.com/docrepo/docrepo/pkg/testenv/miniotest"
	"github.com/docrepo/docrepo/pkg/testenv/natstest"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// envSmoke enables TestComposeSmoke (it builds every command).
const envSmoke = "DOCREPO_DEPLOY_SMOKE"

// TestComposeSmoke runs docker-compose.yml without Docker: every docrepo
// container becomes a process of the binary its image holds (built like
// deploy/Dockerfile builds it, CGO off), with exactly the environment and
// command the compose file gives the container, started in depends_on
// order, each waited for with its own health check command, the one-shot
// run to completion; then a document goes through the gateway (upload to
// MinIO, read, download), and every process must stop cleanly on SIGTERM.
//
// What stands in for the containers' world: Postgres is the test server
// (a fresh database), NATS an in-process JetStream server, MinIO the
// pinned test binary (its credentials replace the compose defaults), and
// every host:port gets a free local port. Without OPENSEARCH_URL in the
// test's environment there is no OpenSearch: search then runs its
// embedded engine (OPENSEARCH_* dropped, an index directory and the
// service token added) and the indexer, which needs OpenSearch, is left
// out; with it, both run as the compose file says.
//
// The operator's first step is real too: `docrepoctl bootstrap` creates the
// tokens, and the compose file is loaded with them as `.env` would give
// them.
func TestComposeSmoke(t *testing.T) {
	if os.Getenv(envSmoke) != "1" {
		t.Skipf("set %s=1 (make deploy-smoke) to run the compose file's processes for real", envSmoke)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s := &smoke{t: t, bin: t.TempDir(), ports: map[string]string{}}

	// The world outside the containers.
	s.dbURL = pgtest.NewDatabase(t)
	s.nats = natstest.Start(t).URL()
	mc := miniotest.Start(t)
	s.minio = mc
	s.opensearch = os.Getenv("OPENSEARCH_URL")

	s.build(ctx)

	// The operator's first step, as docs/deployment.md says.
	// The services' roles are global to the test server: this run's have a
	// prefix of their own, given to the compose file's docrepoctl as .env
	// would, and dropped at the end.
	rolePrefix := fmt.Sprintf("smoke%d_", time.Now().UnixNano()%1e9)
	t.Cleanup(func() { dropRoles(s.dbURL, rolePrefix) })
	boot := exec.CommandContext(ctx, filepath.Join(s.bin, "docrepoctl"), "bootstrap")
	boot.Env = []string{"DATABASE_URL=" + s.dbURL, "DOCREPO_DB_ROLE_PREFIX=" + rolePrefix}
	out, err := boot.Output()
	if err != nil {
		t.Fatalf("docrepoctl bootstrap: %v", err)
	}
	dotenv := types.Mapping{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		dotenv[k] = v
	}
	if dotenv["DOCREPO_SERVICE_TOKEN"] == "" || dotenv["DOCREPO_ADMIN_TOKEN"] == "" || dotenv["DOCREPO_DOCUMENT_DATABASE_URL"] == "" {
		t.Fatalf("docrepoctl bootstrap printed %q, want both tokens and the services' database URLs", out)
	}
	dotenv["DOCREPO_DB_ROLE_PREFIX"] = rolePrefix
	content, err := os.ReadFile(filepath.Join(root, composeFile))
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadComposeEnv(content, dotenv)
	if err != nil {
		t.Fatal(err)
	}
	s.project = p
	s.plan()

	// Start in dependency order.
	for _, name := range s.order {
		svc := p.Services[name]
		for dep, d := range svc.DependsOn {
			if s.skipped[dep] {
				continue
			}
			if d.Condition == types.ServiceConditionHealthy {
				s.waitHealthy(ctx, dep)
			}
		}
		if oneShot(svc) {
			s.runOnce(ctx, name)
		} else {
			s.start(ctx, name)
		}
	}
	for _, name := range s.order {
		if !oneShot(p.Services[name]) {
			s.waitHealthy(ctx, name)
		}
	}
	s.exercise(ctx, dotenv["DOCREPO_ADMIN_TOKEN"])
	s.stopAll()
}

// dropRoles drops the services' roles of prefix, with what they own in
// the database at dbURL.
func dropRoles(dbURL, prefix string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	for _, s := range dbroles.Services {
		role := pgx.Identifier{dbroles.Role(prefix, s.Name)}.Sanitize()
		_, _ = conn.Exec(ctx, `DROP OWNED BY `+role)
		_, _ = conn.Exec(ctx, `DROP ROLE IF EXISTS `+role)
	}
}

// smoke is one run of the compose file's processes.
type smoke struct {
	t          *testing.T
	bin        string
	dbURL      string
	nats       string
	minio      *miniotest.Server
	opensearch string
	project    *types.Project
	// ports maps "service:containerPort" to a free local port.
	ports   map[string]string
	order   []string
	skipped map[string]bool
	mu      sync.Mutex
	procs   []*proc
	healthy map[string]bool
}

type proc struct {
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan error
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > 3000 {
		s = "..." + s[len(s)-3000:]
	}
	return s
}

// loadComposeEnv loads the compose file with an environment (.env).
func loadComposeEnv(content []byte, env types.Mapping) (*types.Project, error) {
	return loadDetails(types.ConfigDetails{
		WorkingDir:  root,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(root, composeFile), Content: content}},
		Environment: env,
	})
}

// build compiles every command as deploy/Dockerfile does.
func (s *smoke) build(ctx context.Context) {
	s.t.Helper()
	dirs := commandDirs(s.t)
	for _, name := range append(slices.Clone(services), "docrepoctl") {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(s.bin, name), "./"+dirs[name])
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			s.t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	addr, err := launcher.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// plan decides which services run, in which order, on which ports.
func (s *smoke) plan() {
	t := s.t
	p := s.project
	s.skipped = map[string]bool{}
	s.healthy = map[string]bool{}
	for name, svc := range p.Services {
		switch {
		case tool(svc):
			s.skipped[name] = true
		case buildCommand(svc) == "":
			s.skipped[name] = true // infrastructure: provided by the test
		case buildCommand(svc) == "indexer" && s.opensearch == "":
			t.Logf("no OPENSEARCH_URL: the indexer does not run, search uses its embedded engine")
			s.skipped[name] = true
		}
	}
	// Free ports for every listen address of every container.
	for name, svc := range p.Services {
		if s.skipped[name] {
			continue
		}
		for _, v := range listenVars {
			if addr, ok := env(svc)[v]; ok {
				s.ports[name+":"+port(addr)] = freePort(t)
			}
		}
	}
	// Depends-on order (a topological sort, dependencies first).
	state := map[string]int{}
	var visit func(string)
	visit = func(n string) {
		switch state[n] {
		case 1:
			t.Fatalf("depends_on cycle through %s", n)
		case 2:
			return
		}
		state[n] = 1
		deps := sortedKeys(p.Services[n].DependsOn)
		for _, d := range deps {
			if !s.skipped[d] {
				visit(d)
			}
		}
		state[n] = 2
		s.order = append(s.order, n)
	}
	for _, n := range sortedKeys(p.Services) {
		if !s.skipped[n] {
			visit(n)
		}
	}
	t.Logf("start order: %v", s.order)
}

var hostPort = regexp.MustCompile(`([A-Za-z0-9.-]+):(\d+)\b`)

// local rewrites an address of the compose network to this machine:
// service:port of a docrepo container to its local port, 0.0.0.0:port and
// 127.0.0.1:port of the container itself likewise.
func (s *smoke) local(container, v string) string {
	return hostPort.ReplaceAllStringFunc(v, func(m string) string {
		sm := hostPort.FindStringSubmatch(m)
		host, p := sm[1], sm[2]
		if loopback(host) || host == "0.0.0.0" {
			host = container // the container's own port
		}
		if _, ok := s.project.Services[host]; ok {
			if lp, ok := s.ports[host+":"+p]; ok {
				return "127.0.0.1:" + lp
			}
		}
		return m
	})
}

// environment is a container's environment, made local.
func (s *smoke) environment(name string) []string {
	svc := s.project.Services[name]
	e := env(svc)
	out := []string{"PATH=/usr/bin:/bin", "TMPDIR=" + s.t.TempDir()}
	embedded := buildCommand(svc) == "search" && s.opensearch == ""
	for _, k := range sortedKeys(e) {
		v := e[k]
		switch {
		case k == "DATABASE_URL":
			// The administrator's URL on the compose network becomes the
			// test database's; a service's own, which bootstrap printed
			// from that one, already points at it.
			if host, _ := urlHost(v); host == "postgres" {
				v = s.dbURL
			}
		case k == "NATS_URL":
			v = s.nats
		case k == "MINIO_ENDPOINT":
			v = s.minio.Endpoint
		case k == "MINIO_ACCESS_KEY":
			v = s.minio.AccessKey
		case k == "MINIO_SECRET_KEY":
			v = s.minio.SecretKey
		case k == "OPENSEARCH_URL" && !embedded:
			v = s.opensearch
		case strings.HasPrefix(k, "OPENSEARCH_") && embedded:
			continue
		case slices.Contains(listenVars, k):
			v = "127.0.0.1:" + s.ports[name+":"+port(v)]
		default:
			v = s.local(name, v)
		}
		out = append(out, k+"="+v)
	}
	if embedded {
		token := env(s.project.Services["migrate"])["DOCREPO_SERVICE_TOKEN"]
		out = append(out, "DOCREPO_INDEX_DIR="+s.t.TempDir(), "DOCREPO_SERVICE_TOKEN="+token)
	}
	return out
}

// binary is what the container's image runs.
func (s *smoke) command(name string) (string, []string) {
	svc := s.project.Services[name]
	return filepath.Join(s.bin, buildCommand(svc)), []string(svc.Command)
}

func (s *smoke) launch(ctx context.Context, name string) *proc {
	bin, args := s.command(name)
	cmd := exec.Command(bin, args...)
	cmd.Env = s.environment(name)
	cmd.Dir = s.t.TempDir()
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, out: out, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p
}

func (s *smoke) runOnce(ctx context.Context, name string) {
	p := s.launch(ctx, name)
	select {
	case err := <-p.done:
		if err != nil {
			s.t.Fatalf("one-shot %s failed: %v\n%s", name, err, p.out.tail())
		}
		s.t.Logf("one-shot %s completed", name)
	case <-time.After(2 * time.Minute):
		_ = p.cmd.Process.Kill()
		s.t.Fatalf("one-shot %s did not finish\n%s", name, p.out.tail())
	}
}

func (s *smoke) start(ctx context.Context, name string) {
	p := s.launch(ctx, name)
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	s.t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
	})
}

func (s *smoke) proc(name string) *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}

// waitHealthy runs the service's own health check command until it passes.
func (s *smoke) waitHealthy(ctx context.Context, name string) {
	if s.healthy[name] {
		return
	}
	hc := s.project.Services[name].HealthCheck
	if hc == nil || len(hc.Test) < 2 || hc.Test[0] != "CMD" || hc.Test[1] != "/usr/local/bin/docrepoctl" {
		s.t.Fatalf("%s: health check %v is not the image's docrepoctl", name, hc)
	}
	args := make([]string, 0, len(hc.Test)-2)
	for _, a := range hc.Test[2:] {
		args = append(args, s.local(name, a))
	}
	deadline := time.Now().Add(90 * time.Second)
	var last []byte
	for time.Now().Before(deadline) {
		if p := s.proc(name); p != nil {
			select {
			case err := <-p.done:
				s.t.Fatalf("%s exited before it was healthy: %v\n%s", name, err, p.out.tail())
			default:
			}
		}
		out, err := exec.CommandContext(ctx, filepath.Join(s.bin, "docrepoctl"), args...).CombinedOutput()
		if err == nil {
			s.healthy[name] = true
			s.t.Logf("%s healthy (docrepoctl %s)", name, strings.Join(args, " "))
			return
		}
		last = out
		time.Sleep(250 * time.Millisecond)
	}
	tail := ""
	if p := s.proc(name); p != nil {
		tail = p.out.tail()
	}
	s.t.Fatalf("%s not healthy after 90s: %s\n%s", name, last, tail)
}

// exercise sends a document through the gateway.
func (s *smoke) exercise(ctx context.Context, adminToken string) {
	t := s.t
	gw := s.project.Services["gateway"]
	base := ""
	for _, pc := range gw.Ports {
		base = "http://127.0.0.1:" + s.ports["gateway:"+fmt.Sprint(pc.Target)]
	}
	api, err := client.New(base, adminToken, client.Options{Retry: client.NoRetry})
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Ready(ctx); err != nil {
		t.Fatalf("readyz: %v", err)
	}
	folder, err := api.CreateFolder(ctx, "Smoke", 0)
	if err != nil {
		t.Fatalf("create folder: %v", err)
	}
	content := bytes.Repeat([]byte("docrepo compose smoke test\n"), 40000) // ~1 MiB
	up, err := api.Upload(ctx, client.Upload{FolderID: folder.FolderID, File: bytes.NewReader(content), Filename: "smoke.txt",
		Metadata: client.Metadata{Description: "smoke.txt"}})
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	if _, err := api.GetDocument(ctx, up.DocID); err != nil {
		t.Fatalf("get document: %v", err)
	}
	dl, err := api.Download(ctx, up.DocID, client.DownloadOptions{})
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	b, err := io.ReadAll(dl.Body)
	dl.Body.Close()
	if err != nil || !bytes.Equal(b, content) || dl.ETag == "" {
		t.Fatalf("download: %d bytes (want %d), ETag %q, %v", len(b), len(content), dl.ETag, err)
	}
	// The blob is in the compose file's bucket on MinIO.
	bucket := env(s.project.Services["document"])["MINIO_BUCKET"]
	resp, err := http.Get(s.minio.URL() + "/" + url.PathEscape(bucket) + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		t.Fatalf("bucket %s was not created in MinIO", bucket)
	}
	if _, err := api.Search(ctx, client.SearchRequest{Where: client.Eq("doc_type", "none")}); err != nil {
		t.Fatalf("search: %v", err)
	}
	t.Logf("through the gateway: folder %d, document %d (%d bytes, downloaded back), search answered", folder.FolderID, up.DocID, len(content))
}

// stopAll sends SIGTERM to every process, gateway first, and expects each
// to exit cleanly within its grace period.
func (s *smoke) stopAll() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		grace := 10 * time.Second
		if g := s.project.Services[p.name].StopGracePeriod; g != nil {
			grace = time.Duration(*g)
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			if err != nil {
				s.t.Errorf("%s did not exit cleanly on SIGTERM: %v\n%s", p.name, err, p.out.tail())
			}
		case <-time.After(grace):
			s.t.Errorf("%s still running %s after SIGTERM (the stop grace period)\n%s", p.name, grace, p.out.tail())
		}
		if strings.Contains(p.out.tail(), "panic:") {
			s.t.Errorf("%s panicked:\n%s", p.name, p.out.tail())
		}
	}
	// Errors logged by any process are worth a look, not a failure.
	for _, p := range s.procs {
		sc := bufio.NewScanner(strings.NewReader(p.out.tail()))
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"level":"ERROR"`) {
				s.t.Logf("%s logged: %s", p.name, sc.Text())
			}
		}
	}
}
