package deploytest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/docrepo/docrepo/pkg/dbroles"
)

// composeFile is the compose file under test, relative to root.
const composeFile = "docker-compose.yml"

// loadCompose loads compose content exactly as `docker compose` would
// (schema validation, interpolation with an empty environment, so every
// ${VAR:-default} takes its default, YAML merge keys), with every profile
// enabled.
func loadCompose(content []byte) (*types.Project, error) {
	return loadDetails(types.ConfigDetails{
		WorkingDir:  root,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(root, composeFile), Content: content}},
		Environment: types.Mapping{},
	})
}

// loadDetails loads a compose project as `docker compose` would.
func loadDetails(details types.ConfigDetails) (*types.Project, error) {
	return loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName("docrepo", true)
		o.Profiles = []string{"*"}
	})
}

// env returns a service's environment with unset values as "".
func env(s types.ServiceConfig) map[string]string {
	out := map[string]string{}
	for k, v := range s.Environment {
		out[k] = ""
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// buildCommand is the docrepo command a service's image is built for (the
// CMD build argument of deploy/Dockerfile), or "" for other images.
func buildCommand(s types.ServiceConfig) string {
	if s.Build == nil {
		return ""
	}
	if v := s.Build.Args["CMD"]; v != nil {
		return *v
	}
	return ""
}

// oneShot reports whether a service runs to completion (never restarted).
func oneShot(s types.ServiceConfig) bool { return s.Restart == "no" }

// tool reports whether a service only runs on demand (a profile).
func tool(s types.ServiceConfig) bool { return len(s.Profiles) > 0 }

// listenVars are the listen addresses of a process; every other
// DOCREPO_<NAME>_ADDR is the address of service NAME.
var listenVars = []string{"DOCREPO_GRPC_ADDR", "DOCREPO_METRICS_ADDR", "DOCREPO_HTTP_ADDR", "DOCREPO_GATEWAY_ADMIN_ADDR"}

// peerAddrVar returns the service a DOCREPO_<NAME>_ADDR variable points at.
func peerAddrVar(v string) (string, bool) {
	if slices.Contains(listenVars, v) || !strings.HasPrefix(v, "DOCREPO_") || !strings.HasSuffix(v, "_ADDR") {
		return "", false
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(v, "DOCREPO_"), "_ADDR")), true
}

func port(addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return p
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// urlHost returns the host and port of a URL value (postgres://, nats://,
// http://) or of a bare host:port.
func urlHost(v string) (host, p string) {
	if u, err := url.Parse(v); err == nil && u.Host != "" {
		return u.Hostname(), u.Port()
	}
	h, p, _ := net.SplitHostPort(v)
	return h, p
}

// dependsTransitively reports whether service from depends on target.
func dependsTransitively(p *types.Project, from, target string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(n string) bool {
		if seen[n] {
			return false
		}
		seen[n] = true
		for dep := range p.Services[n].DependsOn {
			if dep == target || walk(dep) {
				return true
			}
		}
		return false
	}
	return walk(from)
}

// checkCompose returns every problem of a compose project, as sentences
// naming the service.
func checkCompose(t testing.TB, p *types.Project) []string {
	t.Helper()
	cmds := commands(t)
	var problems []string
	add := func(service, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("service %s: %s", service, fmt.Sprintf(format, args...)))
	}

	// Which compose service runs each docrepo command.
	running := map[string][]string{}
	for name, s := range p.Services {
		if cmd := buildCommand(s); cmd != "" && !oneShot(s) && !tool(s) {
			running[cmd] = append(running[cmd], name)
		}
	}
	for _, svc := range services {
		if len(running[svc]) != 1 || running[svc][0] != svc {
			add(svc, "the %s command must run in exactly one long-running service named %s; found %v", svc, svc, running[svc])
		}
	}
	// The migration one-shot: docrepoctl bootstrap -check.
	migrate := ""
	for name, s := range p.Services {
		if buildCommand(s) == "docrepoctl" && oneShot(s) && !tool(s) {
			if !slices.Equal(s.Command, []string{"bootstrap", "-check"}) {
				add(name, "the docrepoctl one-shot runs %q, want [bootstrap -check] (migrate, then verify the service token)", s.Command)
			}
			migrate = name
		}
	}
	if migrate == "" {
		add("-", "no one-shot docrepoctl service (bootstrap -check) runs the migrations")
	}

	// The gRPC address each docrepo service listens on.
	grpcPort := map[string]string{}
	for _, svc := range services {
		if s, ok := p.Services[svc]; ok {
			grpcPort[svc] = port(env(s)["DOCREPO_GRPC_ADDR"])
		}
	}

	for name, s := range p.Services {
		if !oneShot(s) && !tool(s) {
			switch hc := s.HealthCheck; {
			case hc == nil || hc.Disable || len(hc.Test) == 0:
				add(name, "no health check")
			case hc.Test[0] != "CMD" && hc.Test[0] != "CMD-SHELL":
				add(name, "health check test %q must start with CMD or CMD-SHELL", hc.Test)
			}
		}
		for dep, d := range s.DependsOn {
			target, ok := p.Services[dep]
			if !ok {
				add(name, "depends on %s, which does not exist", dep)
				continue
			}
			switch d.Condition {
			case types.ServiceConditionHealthy:
				if target.HealthCheck == nil || target.HealthCheck.Disable {
					add(name, "waits for %s to be service_healthy, but %s has no health check", dep, dep)
				}
			case types.ServiceConditionCompletedSuccessfully:
				if !oneShot(target) {
					add(name, "waits for %s to complete, but %s is not a one-shot (restart: \"no\")", dep, dep)
				}
			default:
				add(name, "depends on %s with condition %q; use service_healthy or service_completed_successfully", dep, d.Condition)
			}
		}

		cmdName := buildCommand(s)
		if cmdName == "" {
			continue
		}
		cmd := cmds[cmdName]
		if cmd == nil {
			add(name, "builds unknown command %q", cmdName)
			continue
		}
		ctx := s.Build.Context
		if !filepath.IsAbs(ctx) {
			ctx = filepath.Join(p.WorkingDir, ctx)
		}
		if filepath.Clean(ctx) != root || s.Build.Dockerfile != "deploy/Dockerfile" {
			add(name, "must build from the repository root with deploy/Dockerfile (context %q, dockerfile %q)", s.Build.Context, s.Build.Dockerfile)
		}
		e := env(s)
		for _, k := range sortedKeys(e) {
			if !cmd.accepts(t, k) {
				add(name, "unknown variable %s: %s does not register it", k, cmdName)
			}
		}
		// Infrastructure a container reaches by URL must be a service it
		// (transitively) waits for.
		needsInfra := func(v, wantImage string) {
			val, ok := e[v]
			if !ok || val == "" {
				add(name, "%s is not set", v)
				return
			}
			host, _ := urlHost(val)
			target, ok := p.Services[host]
			if !ok {
				add(name, "%s=%s: no service %s", v, val, host)
				return
			}
			if wantImage != "" && !strings.Contains(target.Image, wantImage) {
				add(name, "%s=%s: service %s runs %s, not %s", v, val, host, target.Image, wantImage)
			}
			if !dependsTransitively(p, name, host) {
				add(name, "%s points at %s, but the service does not wait for %s (depends_on)", v, host, host)
			}
		}
		if cmd.vars["DATABASE_URL"] {
			needsInfra("DATABASE_URL", "postgres")
		}
		if oneShot(s) || tool(s) {
			continue
		}
		// Each service connects as its own role (pkg/dbroles), never as
		// the administrator: the database enforces the walls.
		if cmd.vars["DATABASE_URL"] {
			cmdName := buildCommand(s)
			if u, err := url.Parse(e["DATABASE_URL"]); err != nil || u.User.Username() != dbroles.Role("", cmdName) {
				add(name, "DATABASE_URL=%s: want the role %s (docrepoctl bootstrap's DOCREPO_%s_DATABASE_URL), not a shared user",
					e["DATABASE_URL"], dbroles.Role("", cmdName), strings.ToUpper(cmdName))
			}
		}

		// Long-running docrepo services.
		for _, v := range listenVars {
			if !cmd.vars[v] {
				continue
			}
			addr, ok := e[v]
			if !ok {
				add(name, "%s is not set (the default listens on loopback only)", v)
				continue
			}
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				add(name, "%s=%q: %v", v, addr, err)
			} else if loopback(host) {
				add(name, "%s=%s listens on loopback: unreachable from other containers", v, addr)
			}
		}
		if cmd.vars["NATS_URL"] {
			needsInfra("NATS_URL", "nats")
		}
		for _, v := range sortedKeys(cmd.vars) {
			peer, ok := peerAddrVar(v)
			if !ok || !slices.Contains(services, peer) {
				continue
			}
			addr, ok := e[v]
			if !ok {
				add(name, "%s is not set (its default is loopback)", v)
				continue
			}
			host, pp, err := net.SplitHostPort(addr)
			switch {
			case err != nil:
				add(name, "%s=%q: %v", v, addr, err)
			case host != peer:
				add(name, "%s=%s: want the %s service", v, addr, peer)
			case pp != grpcPort[peer]:
				add(name, "%s=%s: %s listens for gRPC on port %q", v, addr, peer, grpcPort[peer])
			}
		}
		if cmd.vars["DOCREPO_MIGRATE"] {
			if v, ok := e["DOCREPO_MIGRATE"]; ok && v != "true" {
				add(name, "DOCREPO_MIGRATE=%q: each service migrates its own schema at start-up, set it to \"true\"", v)
			}
			if d, ok := s.DependsOn[migrate]; !ok || d.Condition != types.ServiceConditionCompletedSuccessfully {
				add(name, "does not wait for %s (service_completed_successfully)", migrate)
			}
		}
		// Health check: docrepoctl health against the container's own
		// gRPC port, or the gateway's HTTP port.
		if hc := s.HealthCheck; hc != nil && len(hc.Test) > 0 {
			if len(hc.Test) != 4 || hc.Test[0] != "CMD" || hc.Test[1] != "/usr/local/bin/docrepoctl" || hc.Test[2] != "health" {
				add(name, "health check %q: want [CMD /usr/local/bin/docrepoctl health TARGET] (the image has no shell)", hc.Test)
			} else if target := hc.Test[3]; strings.HasPrefix(target, "http://") {
				u, err := url.Parse(target)
				if err != nil || !loopback(u.Hostname()) || u.Port() != port(e["DOCREPO_HTTP_ADDR"]) || (u.Path != "/readyz" && u.Path != "/healthz") {
					add(name, "health check %s: want http://127.0.0.1:<DOCREPO_HTTP_ADDR port>/readyz", target)
				}
			} else if host, pp, err := net.SplitHostPort(target); err != nil || !loopback(host) || pp != port(e["DOCREPO_GRPC_ADDR"]) {
				add(name, "health check %s: want 127.0.0.1:<DOCREPO_GRPC_ADDR port>", target)
			}
		}
	}

	// Command-specific requirements.
	if s, ok := p.Services["gateway"]; ok {
		e := env(s)
		httpPort := port(e["DOCREPO_HTTP_ADDR"])
		published := false
		for _, pc := range s.Ports {
			if fmt.Sprint(pc.Target) == httpPort && pc.Published == "8080" {
				published = true
			}
		}
		if !published {
			add("gateway", "must publish port 8080 to DOCREPO_HTTP_ADDR's port %q; ports %+v", httpPort, s.Ports)
		}
		// The admin listener (/metrics, the detailed /readyz) is for the
		// compose network, never the host, and never the REST port.
		if admin, ok := e["DOCREPO_GATEWAY_ADMIN_ADDR"]; ok && admin != "" {
			if port(admin) == httpPort {
				add("gateway", "DOCREPO_GATEWAY_ADMIN_ADDR=%s is the REST port: /metrics would be public", admin)
			}
			for _, pc := range s.Ports {
				if fmt.Sprint(pc.Target) == port(admin) {
					add("gateway", "publishes the admin port %s (/metrics, the detailed /readyz) on the host", port(admin))
				}
			}
		}
		for _, v := range sortedKeys(e) {
			if peer, ok := peerAddrVar(v); ok {
				if d, ok := s.DependsOn[peer]; !ok || d.Condition != types.ServiceConditionHealthy {
					add("gateway", "routes to %s but does not wait for it to be healthy", peer)
				}
			}
		}
	}
	for _, svc := range []string{"search", "indexer"} {
		if s, ok := p.Services[svc]; ok {
			e := env(s)
			if e["OPENSEARCH_URL"] == "" {
				add(svc, "OPENSEARCH_URL is not set: the deployment runs the OpenSearch engine")
				continue
			}
			host, _ := urlHost(e["OPENSEARCH_URL"])
			if t, ok := p.Services[host]; !ok || !strings.Contains(t.Image, "opensearch") {
				add(svc, "OPENSEARCH_URL=%s does not point at an OpenSearch service", e["OPENSEARCH_URL"])
			} else if !dependsTransitively(p, svc, host) {
				add(svc, "uses OpenSearch but does not wait for %s", host)
			}
		}
	}
	if s, ok := p.Services["indexer"]; ok {
		if _, ok := env(s)["DOCREPO_SERVICE_TOKEN"]; !ok {
			add("indexer", "DOCREPO_SERVICE_TOKEN is not passed: the indexer reads documents with it")
		}
	}
	if s, ok := p.Services["folder"]; ok {
		if _, ok := env(s)["DOCREPO_SERVICE_TOKEN"]; !ok {
			add("folder", "DOCREPO_SERVICE_TOKEN is not passed: a deletion tells the document service with it")
		}
	}
	if s, ok := p.Services["document"]; ok {
		e := env(s)
		for _, v := range []string{"MINIO_ENDPOINT", "MINIO_ACCESS_KEY", "MINIO_SECRET_KEY", "MINIO_BUCKET"} {
			if e[v] == "" {
				add("document", "%s is not set: blobs go to MinIO", v)
			}
		}
		host, _ := urlHost(e["MINIO_ENDPOINT"])
		if m, ok := p.Services[host]; !ok || !strings.Contains(m.Image, "minio") {
			add("document", "MINIO_ENDPOINT=%s does not point at a MinIO service", e["MINIO_ENDPOINT"])
		} else {
			me := env(m)
			if e["MINIO_ACCESS_KEY"] != me["MINIO_ROOT_USER"] || e["MINIO_SECRET_KEY"] != me["MINIO_ROOT_PASSWORD"] {
				add("document", "MINIO_ACCESS_KEY/MINIO_SECRET_KEY differ from %s's MINIO_ROOT_USER/MINIO_ROOT_PASSWORD", host)
			}
			if !dependsTransitively(p, "document", host) {
				add("document", "uses MinIO but does not wait for %s", host)
			}
		}
	}
	// Search embeds query text with the embedder the indexer embedded the
	// documents with: their embedder settings must agree.
	if a, b := p.Services["search"], p.Services["indexer"]; a.Name != "" && b.Name != "" {
		ea, eb := env(a), env(b)
		for _, v := range sortedKeys(cmds["search"].vars) {
			if (strings.HasPrefix(v, "DOCREPO_EMBED") || strings.HasPrefix(v, "DOCREPO_USE_")) && cmds["indexer"].vars[v] && ea[v] != eb[v] {
				add("search", "%s=%q but the indexer has %q: query and document vectors would not compare", v, ea[v], eb[v])
			}
		}
	}
	// The gateway refuses uploads over its limit before the document
	// service sees them, and the service enforces its own: the two agree.
	if a, b := env(p.Services["gateway"]), env(p.Services["document"]); a["DOCREPO_MAX_UPLOAD_BYTES"] != b["DOCREPO_MAX_UPLOAD_BYTES"] {
		add("gateway", "DOCREPO_MAX_UPLOAD_BYTES=%q but the document service has %q", a["DOCREPO_MAX_UPLOAD_BYTES"], b["DOCREPO_MAX_UPLOAD_BYTES"])
	}
	// The write path yields the CPU to search and indexing on a busy host
	// (docs/design.md §7): a lower CPU weight than theirs.
	weight := func(s types.ServiceConfig) int64 {
		if s.CPUShares == 0 {
			return 1024 // Docker's default
		}
		return s.CPUShares
	}
	for _, w := range []string{"gateway", "document", "folder", "schema"} {
		for _, r := range []string{"search", "indexer"} {
			if ws, rs := weight(p.Services[w]), weight(p.Services[r]); ws >= rs {
				add(w, "CPU weight (cpu_shares) %d is not below %s's %d: a bulk upload would starve indexing and searches", ws, r, rs)
			}
		}
	}
	sort.Strings(problems)
	return problems
}

func TestCompose(t *testing.T) {
	content, err := os.ReadFile(filepath.Join(root, composeFile))
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadCompose(content)
	if err != nil {
		t.Fatalf("docker compose would not load %s: %v", composeFile, err)
	}
	for _, problem := range checkCompose(t, p) {
		t.Error(problem)
	}
}

// TestComposeCheckCatchesMistakes mutates an in-memory copy of the compose
// file and expects each mistake to be reported: the check can fail.
func TestComposeCheckCatchesMistakes(t *testing.T) {
	content, err := os.ReadFile(filepath.Join(root, composeFile))
	if err != nil {
		t.Fatal(err)
	}
	orig := string(content)
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{
			name: "write path as heavy as search",
			old:  "    cpu_shares: 512\n\n  schema:",
			new:  "\n  schema:",
			want: "service folder: CPU weight (cpu_shares) 1024 is not below search's 1024",
		},
		{
			name: "unknown variable",
			old:  "      DOCREPO_GRPC_ADDR: 0.0.0.0:9102\n",
			new:  "      DOCREPO_GRPC_ADDR: 0.0.0.0:9102\n      DOCREPO_FOLDER_CACHE: \"1\"\n",
			want: "service folder: unknown variable DOCREPO_FOLDER_CACHE",
		},
		{
			name: "another command's variable",
			old:  "      DOCREPO_HTTP_ADDR: 0.0.0.0:8080\n",
			new:  "      DOCREPO_HTTP_ADDR: 0.0.0.0:8080\n      MINIO_ENDPOINT: minio:9000\n",
			want: "service gateway: unknown variable MINIO_ENDPOINT",
		},
		{
			name: "gateway routes to the wrong port",
			old:  "DOCREPO_SEARCH_ADDR: search:9103",
			new:  "DOCREPO_SEARCH_ADDR: search:9113",
			want: "service gateway: DOCREPO_SEARCH_ADDR=search:9113: search listens for gRPC on port \"9103\"",
		},
		{
			name: "address of the wrong service",
			old:  "DOCREPO_FOLDER_ADDR: folder:9102",
			new:  "DOCREPO_FOLDER_ADDR: schema:9102",
			want: "want the folder service",
		},
		{
			name: "listening on loopback",
			old:  "DOCREPO_GRPC_ADDR: 0.0.0.0:9104",
			new:  "DOCREPO_GRPC_ADDR: 127.0.0.1:9104",
			want: "service schema: DOCREPO_GRPC_ADDR=127.0.0.1:9104 listens on loopback",
		},
		{
			name: "no health check",
			old:  "    healthcheck:\n      test: [\"CMD\", \"/usr/local/bin/docrepoctl\", \"health\", \"127.0.0.1:9104\"]\n      <<: *healthcheck-timing\n",
			new:  "",
			want: "service schema: no health check",
		},
		{
			name: "health check of another port",
			old:  "\"health\", \"127.0.0.1:9101\"",
			new:  "\"health\", \"127.0.0.1:9111\"",
			want: "service document: health check 127.0.0.1:9111",
		},
		{
			name: "a service as the administrator",
			old:  "DATABASE_URL: ${DOCREPO_FOLDER_DATABASE_URL:-postgres://docrepo_folder@postgres:5432/docrepo?sslmode=disable}",
			new:  "DATABASE_URL: postgres://docrepo:docrepo@postgres:5432/docrepo?sslmode=disable",
			want: "service folder: DATABASE_URL=postgres://docrepo:docrepo@postgres:5432/docrepo?sslmode=disable: want the role docrepo_folder",
		},
		{
			name: "a service as another's role",
			old:  "DATABASE_URL: ${DOCREPO_SEARCH_DATABASE_URL:-postgres://docrepo_search@postgres:5432/docrepo?sslmode=disable}",
			new:  "DATABASE_URL: ${DOCREPO_DOCUMENT_DATABASE_URL:-postgres://docrepo_document@postgres:5432/docrepo?sslmode=disable}",
			want: "service search: DATABASE_URL=postgres://docrepo_document@postgres:5432/docrepo?sslmode=disable: want the role docrepo_search",
		},
		{
			name: "gateway admin listener published",
			old:  "      - \"${DOCREPO_HTTP_PORT:-8080}:8080\"\n",
			new:  "      - \"${DOCREPO_HTTP_PORT:-8080}:8080\"\n      - \"9116:9116\"\n",
			want: "service gateway: publishes the admin port 9116",
		},
		{
			name: "gateway admin listener on the REST port",
			old:  "DOCREPO_GATEWAY_ADMIN_ADDR: 0.0.0.0:9116",
			new:  "DOCREPO_GATEWAY_ADMIN_ADDR: 0.0.0.0:8080",
			want: "service gateway: DOCREPO_GATEWAY_ADMIN_ADDR=0.0.0.0:8080 is the REST port",
		},
		{
			name: "gateway published on the wrong container port",
			old:  "\"${DOCREPO_HTTP_PORT:-8080}:8080\"",
			new:  "\"${DOCREPO_HTTP_PORT:-8080}:8081\"",
			want: "service gateway: must publish port 8080",
		},
		{
			name: "search without OpenSearch",
			old:  "      <<: [*service-env, *embedder-env, *opensearch-env]\n      DATABASE_URL: ${DOCREPO_SEARCH_DATABASE_URL",
			new:  "      <<: [*service-env, *embedder-env]\n      DATABASE_URL: ${DOCREPO_SEARCH_DATABASE_URL",
			want: "service search: OPENSEARCH_URL is not set",
		},
		{
			name: "embedders differ",
			old:  "      DOCREPO_SERVICE_TOKEN: ${DOCREPO_SERVICE_TOKEN:-}\n    healthcheck:",
			new:  "      DOCREPO_SERVICE_TOKEN: ${DOCREPO_SERVICE_TOKEN:-}\n      DOCREPO_EMBEDDER: openai\n    healthcheck:",
			want: "service search: DOCREPO_EMBEDDER=\"use\" but the indexer has \"openai\"",
		},
		{
			name: "indexer without the service token",
			old:  "      DOCREPO_SERVICE_TOKEN: ${DOCREPO_SERVICE_TOKEN:-}\n    healthcheck:",
			new:  "    healthcheck:",
			want: "service indexer: DOCREPO_SERVICE_TOKEN is not passed",
		},
		{
			name: "folder without the service token",
			old:  "      DOCREPO_SERVICE_TOKEN: ${DOCREPO_SERVICE_TOKEN:-}\n      DOCREPO_DOCUMENT_ADDR: document:9101\n",
			new:  "      DOCREPO_DOCUMENT_ADDR: document:9101\n",
			want: "service folder: DOCREPO_SERVICE_TOKEN is not passed",
		},
		{
			name: "services not migrating their own schemas",
			old:  "DOCREPO_MIGRATE: \"true\"",
			new:  "DOCREPO_MIGRATE: \"false\"",
			want: "service folder: DOCREPO_MIGRATE=\"false\"",
		},
		{
			name: "not waiting for the migrate one-shot",
			old:  "\"127.0.0.1:9102\"]\n      <<: *healthcheck-timing\n    depends_on:\n      migrate:\n        condition: service_completed_successfully\n",
			new:  "\"127.0.0.1:9102\"]\n      <<: *healthcheck-timing\n    depends_on:\n",
			want: "service folder: does not wait for migrate",
		},
		{
			name: "gateway does not wait for a backend",
			old:  "      search:\n        condition: service_healthy\n      schema:\n        condition: service_healthy\n    restart",
			new:  "      schema:\n        condition: service_healthy\n    restart",
			want: "service gateway: routes to search but does not wait for it",
		},
		{
			name: "waiting for a long-running service to complete",
			old:  "      nats:\n        condition: service_healthy\n      opensearch:",
			new:  "      nats:\n        condition: service_completed_successfully\n      opensearch:",
			want: "waits for nats to complete, but nats is not a one-shot",
		},
		{
			name: "upload limits differ",
			old:  "      DOCREPO_MAX_UPLOAD_BYTES: ${DOCREPO_MAX_UPLOAD_BYTES:-10737418240}\n      DOCREPO_REQUEST_TIMEOUT",
			new:  "      DOCREPO_MAX_UPLOAD_BYTES: \"1024\"\n      DOCREPO_REQUEST_TIMEOUT",
			want: "service gateway: DOCREPO_MAX_UPLOAD_BYTES=\"1024\" but the document service has \"10737418240\"",
		},
		{
			name: "MinIO credentials differ",
			old:  "MINIO_SECRET_KEY: ${MINIO_ROOT_PASSWORD:-docrepo-minio-secret}",
			new:  "MINIO_SECRET_KEY: not-the-password",
			want: "service document: MINIO_ACCESS_KEY/MINIO_SECRET_KEY differ",
		},
		{
			name: "database host is not a service",
			old:  "postgres://docrepo_folder@postgres:5432/",
			new:  "postgres://docrepo_folder@db:5432/",
			want: "service folder: DATABASE_URL=postgres://docrepo_folder@db:5432/docrepo?sslmode=disable: no service db",
		},
		{
			name: "dependency on a service that does not exist",
			old:  "      schema:\n        condition: service_healthy\n    restart",
			new:  "      schema:\n        condition: service_healthy\n      cache:\n        condition: service_healthy\n    restart",
			want: "depends on undefined service \"cache\"",
		},
		{
			name: "a service is missing",
			old:  "        CMD: indexer\n",
			new:  "        CMD: search\n",
			want: "service indexer: the indexer command must run in exactly one long-running service",
		},
		{
			name: "the one-shot does not check the token",
			old:  "command: [\"bootstrap\", \"-check\"]",
			new:  "command: [\"migrate\"]",
			want: "service migrate: the docrepoctl one-shot runs",
		},
		{
			name: "not a compose file",
			old:  "services:\n  postgres:",
			new:  "services:\n  postgres:\n    replicas_please: 3",
			want: "replicas_please",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mutated := strings.Replace(orig, tt.old, tt.new, 1)
			if mutated == orig {
				t.Fatalf("the mutation does not apply: %q is not in %s", tt.old, composeFile)
			}
			p, err := loadCompose([]byte(mutated))
			if err != nil {
				if !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("load error %v, want it to mention %q", err, tt.want)
				}
				return
			}
			problems := checkCompose(t, p)
			for _, pr := range problems {
				if strings.Contains(pr, tt.want) {
					return
				}
			}
			t.Fatalf("mutation not reported; want %q, got:\n%s", tt.want, strings.Join(problems, "\n"))
		})
	}
}
