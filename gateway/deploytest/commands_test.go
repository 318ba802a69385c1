package deploytest

import (
	"context"
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/docrepo/docrepo/pkg/config/configref"
)

// root is the repository root (this package is gateway/deploytest).
var root = func() string {
	abs, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return abs
}()

var (
	collectOnce sync.Once
	collected   []configref.Command
	collectErr  error
)

// collect returns every command's settings as the built binary reports
// them in its -h usage (pkg/config/configref): the tests read the programs
// users run, not a copy of their registrations.
func collect(t testing.TB) []configref.Command {
	t.Helper()
	collectOnce.Do(func() {
		dir, err := os.MkdirTemp("", "docrepo-deploytest-bin-")
		if err != nil {
			collectErr = err
			return
		}
		defer os.RemoveAll(dir)
		collected, collectErr = configref.Collect(context.Background(), root, dir)
	})
	if collectErr != nil {
		t.Fatal(collectErr)
	}
	return collected
}

// registered lists, for each command, the variables it registers.
func registered(t testing.TB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, c := range collect(t) {
		for _, v := range c.Vars {
			out[c.Name] = append(out[c.Name], v.Env)
		}
	}
	return out
}

// services are the long-running commands every deployment runs.
var services = []string{"gateway", "document", "folder", "search", "schema", "indexer"}

// command is one main package of the repository.
type command struct {
	name string
	dir  string // relative to root
	// vars are the environment variables it reads.
	vars map[string]bool
	// tracing is true for processes that set up tracing (every service and
	// the gateway): they also read the tracing variables.
	tracing bool
}

// commandDirs finds every main package: gateway/, services/*/, pkg/cmd/*/.
func commandDirs(t testing.TB) map[string]string {
	t.Helper()
	dirs := map[string]string{}
	if _, err := os.Stat(filepath.Join(root, "gateway", "main.go")); err == nil {
		dirs["gateway"] = "gateway"
	}
	for _, pattern := range []string{"services/*/main.go", "pkg/cmd/*/main.go"} {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			rel, _ := filepath.Rel(root, filepath.Dir(m))
			dirs[filepath.Base(rel)] = filepath.ToSlash(rel)
		}
	}
	return dirs
}

var (
	commandsOnce sync.Once
	commandsMemo map[string]*command
	commandsErr  error
)

// commands returns every command with the variables it reads: those its
// Config.Register registers, plus those its main package registers or reads
// itself (found in its source).
func commands(t testing.TB) map[string]*command {
	t.Helper()
	commandsOnce.Do(func() {
		commandsMemo = map[string]*command{}
		for name, dir := range commandDirs(t) {
			c := &command{name: name, dir: dir, vars: map[string]bool{}}
			if vars, ok := registered(t)[name]; ok {
				for _, v := range vars {
					c.vars[v] = true
				}
				c.tracing = slices.Contains(services, name)
			} else if !strings.HasPrefix(dir, "pkg/cmd/") {
				continue // reported by TestEveryCommandIsKnown
			}
			found, err := envReads(filepath.Join(root, dir))
			if err != nil {
				commandsErr = err
				return
			}
			for _, v := range found {
				c.vars[v] = true
			}
			commandsMemo[name] = c
		}
	})
	if commandsErr != nil {
		t.Fatal(commandsErr)
	}
	return commandsMemo
}

// passThrough reports whether a process that sets up tracing reads name
// directly from its environment: the OpenTelemetry SDK's own OTEL_*
// variables (docrepo's tracing settings are registered like any other).
func passThrough(name string) bool { return strings.HasPrefix(name, "OTEL_") }

// accepts reports whether command c reads variable name.
func (c *command) accepts(t testing.TB, name string) bool {
	return c.vars[name] || (c.tracing && passThrough(name))
}

var envName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// loaderMethods are the config.Loader registration methods; their third
// argument is the variable name.
var loaderMethods = map[string]bool{"String": true, "Int": true, "Int64": true, "Float64": true, "Bool": true, "Duration": true}

// envReads lists the environment variables the Go files of dir (tests
// excluded) read by name: getenv/Getenv/LookupEnv calls and config.Loader
// registrations whose variable is a string literal or a constant of the
// package.
func envReads(dir string) ([]string, error) {
	files, err := goFiles(token.NewFileSet(), dir)
	if err != nil {
		return nil, err
	}
	str := stringConsts(files)
	seen := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var fn string
			switch x := call.Fun.(type) {
			case *ast.Ident:
				fn = x.Name
			case *ast.SelectorExpr:
				fn = x.Sel.Name
			}
			var arg ast.Expr
			switch {
			case (fn == "getenv" || fn == "Getenv" || fn == "LookupEnv") && len(call.Args) == 1:
				arg = call.Args[0]
			case loaderMethods[fn] && len(call.Args) >= 4:
				arg = call.Args[2]
			default:
				return true
			}
			if v := str(arg); envName.MatchString(v) {
				seen[v] = true
			}
			return true
		})
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out, nil
}

// TestEveryCommandIsKnown makes sure no command escapes these checks: a new
// service needs its name in services.
func TestEveryCommandIsKnown(t *testing.T) {
	dirs := commandDirs(t)
	for name, dir := range dirs {
		if !slices.Contains(services, name) && !strings.HasPrefix(dir, "pkg/cmd/") {
			t.Errorf("command %s (%s) is not in deploytest's services: add it", name, dir)
		}
	}
	for _, s := range services {
		if _, ok := dirs[s]; !ok {
			t.Errorf("service %s has no main package", s)
		}
	}
}

// TestCommandVars pins a few facts the other tests rely on, so that a
// broken discovery cannot make them pass vacuously.
func TestCommandVars(t *testing.T) {
	cmds := commands(t)
	tests := []struct {
		command string
		want    []string
	}{
		{command: "gateway", want: []string{"DOCREPO_HTTP_ADDR", "DOCREPO_DOCUMENT_ADDR", "DOCREPO_SEARCH_ADDR"}},
		{command: "folder", want: []string{"DATABASE_URL", "NATS_URL", "DOCREPO_GRPC_ADDR", "DOCREPO_METRICS_ADDR", "DOCREPO_MIGRATE"}},
		{command: "document", want: []string{"MINIO_ENDPOINT", "MINIO_ACCESS_KEY", "MINIO_SECRET_KEY", "DOCREPO_FOLDER_ADDR"}},
		{command: "search", want: []string{"OPENSEARCH_URL", "DOCREPO_EMBEDDER"}},
		{command: "indexer", want: []string{"OPENSEARCH_URL", "DOCREPO_SERVICE_TOKEN", "DOCREPO_DOCUMENT_ADDR"}},
		{command: "docrepoctl", want: []string{"DATABASE_URL", "DOCREPO_SERVICE_TOKEN", "DOCREPO_ADMIN_TOKEN"}},
		{command: "devstack", want: []string{"DATABASE_URL", "DOCREPO_DATA_DIR", "DOCREPO_PG_PORT"}},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			c := cmds[tt.command]
			if c == nil {
				t.Fatalf("no command %s", tt.command)
			}
			for _, v := range tt.want {
				if !c.vars[v] {
					t.Errorf("%s does not read %s; read: %v", tt.command, v, sortedKeys(c.vars))
				}
			}
		})
	}
	if cmds["gateway"].vars["DATABASE_URL"] {
		t.Error("the gateway reads DATABASE_URL? it has no database")
	}
	if !cmds["gateway"].vars["DOCREPO_TRACING_EXPORTER"] || !cmds["indexer"].vars["DOCREPO_TRACING_SAMPLE_RATIO"] {
		t.Error("the tracing settings are not registered by the gateway and the services")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
