package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Service is one process of docrepo's topology.
type Service struct {
	// Name is its command (a key of Commands).
	Name string
	// Slot numbers its ports when the stack's ports are fixed
	// (Stack.BasePort).
	Slot int
	// WritePath marks a process an upload passes through before the
	// index: it runs Stack.WriteNice CPU-priority steps below the others.
	WritePath bool
	// HTTP marks the gateway: it serves REST on Stack.HTTPAddr, starts
	// after every gRPC service listens, and is waited for on /healthz.
	HTTP bool
	// Called marks a service the others call: its address is in every
	// process's environment (DOCREPO_<NAME>_ADDR), whether it runs or not.
	Called bool
	// Runs says whether a stack runs it (nil: always).
	Runs func(s *Stack) bool
	// Env is its own environment beyond the stack's common one (nil:
	// none).
	Env func(s *Stack) []string
}

// Services is docrepo's topology: every process of a deployment on one
// machine, in the order they start, with what each needs beyond the
// common environment (Stack.CommonEnv). `make run` (pkg/cmd/devstack), the
// end-to-end tests (gateway/e2e) and through devstack the fault-injection
// suite start it; a new process, or a new setting of one, is added here.
var Services = []Service{
	{Name: "devnats", Slot: 7, Runs: func(s *Stack) bool { return s.NATSURL == "" },
		Env: func(s *Stack) []string {
			return []string{"DOCREPO_NATS_ADDR=" + s.addrs["devnats"].Listen, "DOCREPO_NATS_STORE=" + filepath.Join(s.DataDir, "nats")}
		}},
	{Name: "folder", Slot: 2, WritePath: true, Called: true},
	{Name: "schema", Slot: 4, WritePath: true, Called: true},
	{Name: "document", Slot: 1, WritePath: true, Called: true,
		Env: func(s *Stack) []string { return []string{"DOCREPO_BLOB_DIR=" + s.BlobDir()} }},
	// The search service indexes in its own process with the embedded
	// engine; with OpenSearch the indexer process writes the index.
	{Name: "search", Slot: 3, Called: true},
	{Name: "indexer", Slot: 5, Runs: func(s *Stack) bool { return s.Setting("OPENSEARCH_URL") != "" }},
	{Name: "gateway", Slot: 6, WritePath: true, HTTP: true},
}

// Addrs are the addresses of one process of a stack.
type Addrs struct {
	// Listen is where it serves: gRPC, REST for the gateway, NATS for
	// devnats.
	Listen string
	// Metrics serves /metrics, /healthz and /readyz: a service's
	// DOCREPO_METRICS_ADDR, the gateway's admin listener
	// (DOCREPO_GATEWAY_ADMIN_ADDR); empty for devnats.
	Metrics string
	// Pprof serves Go's profiles when Stack.Pprof is set.
	Pprof string
}

// Stack runs docrepo's topology (Services) as child processes, each
// configured only through its environment as a deployment configures it.
// Set its fields, then Start; Stop ends it.
type Stack struct {
	// Binaries maps each command to its binary (Build's result, or the
	// files of bin/).
	Binaries map[string]string
	// DatabaseURL is the Postgres every service migrates and uses, unless
	// DatabaseURLs has the service's own.
	DatabaseURL string
	// DatabaseURLs are services' own DATABASE_URLs, by service name: each
	// connects as a Postgres role that owns only its schema (pkg/dbroles,
	// as docrepoctl bootstrap sets them up).
	DatabaseURLs map[string]string
	// NATSURL is the JetStream server (empty: the stack runs devnats, its
	// stream under DataDir/nats).
	NATSURL string
	// ServiceToken is the service credential (scope internal) the
	// processes call each other with.
	ServiceToken string
	// DataDir holds the stack's files: blobs/, index/, nats/.
	DataDir string
	// HTTPAddr is the gateway's REST address; NATSAddr devnats's (empty:
	// free ports).
	HTTPAddr, NATSAddr string
	// BasePort, when set, fixes the other ports: the process in slot i
	// serves on BasePort+i, its metrics on BasePort+10+i and its profiles
	// on BasePort+20+i. Zero: free ports.
	BasePort int
	// Pprof serves every process's Go profiles (Addrs.Pprof).
	Pprof bool
	// Env is given to every process after the common environment (later
	// entries win): log settings, MINIO_*, OPENSEARCH_*, ….
	Env []string
	// ServiceEnv adds to one process's environment, after Env.
	ServiceEnv map[string][]string
	// Only, when set, runs just these services; the others are at their
	// External address, or at one nothing listens on (their calls fail as
	// a service that is down fails).
	Only []string
	// External are the addresses of services another stack runs: a
	// variant of a stack (one service configured otherwise) shares the
	// rest of it.
	External map[string]string
	// WriteNice lowers the write path's CPU priority (Service.WritePath).
	WriteNice int
	// Supervise restarts a process that exits, after a back-off, as a
	// process manager would (Supervisor); without it a process that exits
	// stays down, as a test wants to see.
	Supervise bool
	// PidDir, with Supervise, holds <name>.pid of each process.
	PidDir string
	// Output receives every process's output line by line; nil discards
	// it.
	Output io.Writer
	// PrefixLines writes each line after its process's name ("search   | ").
	PrefixLines bool
	// Log receives the supervisor's and the stack's own lines.
	Log io.Writer
	// Wait bounds each wait for a process to listen (default 60 s).
	Wait time.Duration

	addrs map[string]Addrs
	run   runner
}

// runner starts and stops the stack's processes: a Supervisor, or a
// group that leaves a process that exits down.
type runner interface {
	Start(Spec) error
	Process(name string) *Process
	Stop(grace time.Duration)
}

// Setting returns the last value s.Env gives key ("" when none).
func (s *Stack) Setting(key string) string {
	v := ""
	for _, kv := range s.Env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// BlobDir is where the document service keeps files on disk.
func (s *Stack) BlobDir() string { return filepath.Join(s.DataDir, "blobs") }

// IndexDir is where the embedded search engine keeps its index.
func (s *Stack) IndexDir() string { return filepath.Join(s.DataDir, "index") }

// Runs tells whether the stack runs the named service.
func (s *Stack) Runs(name string) bool {
	i := slices.IndexFunc(Services, func(sv Service) bool { return sv.Name == name })
	if i < 0 {
		return false
	}
	return s.runs(Services[i])
}

func (s *Stack) runs(sv Service) bool {
	if len(s.Only) > 0 && !slices.Contains(s.Only, sv.Name) && sv.Name != "devnats" {
		return false
	}
	return sv.Runs == nil || sv.Runs(s)
}

// Addr returns the addresses of the named process (zero before Start).
func (s *Stack) Addr(name string) Addrs { return s.addrs[name] }

// URL is the gateway's base URL.
func (s *Stack) URL() string { return "http://" + s.addrs["gateway"].Listen }

// Process returns the current process of the named service (nil when it
// does not run).
func (s *Stack) Process(name string) *Process {
	if s.run == nil {
		return nil
	}
	return s.run.Process(name)
}

// CommonEnv is what every process of the stack gets before its own
// environment: the database, NATS, the service token, every service's
// address, migrations on, then Env.
func (s *Stack) CommonEnv() []string {
	env := []string{
		"DATABASE_URL=" + s.DatabaseURL,
		"NATS_URL=" + s.natsURL(),
		"DOCREPO_MIGRATE=true",
	}
	if s.ServiceToken != "" {
		env = append(env, "DOCREPO_SERVICE_TOKEN="+s.ServiceToken)
	}
	for _, sv := range Services {
		if sv.Called {
			env = append(env, fmt.Sprintf("DOCREPO_%s_ADDR=%s", strings.ToUpper(sv.Name), s.addrs[sv.Name].Listen))
		}
	}
	return append(env, s.Env...)
}

func (s *Stack) natsURL() string {
	if s.NATSURL != "" {
		return s.NATSURL
	}
	return "nats://" + s.addrs["devnats"].Listen
}

// Start starts the topology in order: NATS (devnats, unless NATSURL is
// set), the gRPC services, each listening before the gateway starts, then
// the gateway, serving /healthz before Start returns. On an error what was
// started is stopped again.
func (s *Stack) Start(ctx context.Context) error {
	if err := s.planAddrs(); err != nil {
		return err
	}
	if s.Supervise {
		s.run = &Supervisor{Log: s.Log, PidDir: s.PidDir}
	} else {
		s.run = &group{}
	}
	if err := s.startAll(ctx); err != nil {
		s.Stop(30 * time.Second)
		return err
	}
	return nil
}

func (s *Stack) startAll(ctx context.Context) error {
	var waiting []string // started, not yet waited for
	for _, sv := range Services {
		if !s.runs(sv) {
			continue
		}
		if sv.HTTP { // the gateway starts once every service listens
			if err := s.waitListening(ctx, waiting...); err != nil {
				return err
			}
			waiting = nil
		}
		if err := s.startService(sv); err != nil {
			return err
		}
		switch {
		case sv.HTTP:
			if err := s.waitHealthy(ctx, sv.Name); err != nil {
				return err
			}
		case sv.Name == "devnats": // every service connects to it at start
			if err := s.waitListening(ctx, sv.Name); err != nil {
				return err
			}
		default:
			waiting = append(waiting, sv.Name)
		}
	}
	return s.waitListening(ctx, waiting...)
}

// Stop stops every process, the last started first (SIGTERM, then SIGKILL
// after grace).
func (s *Stack) Stop(grace time.Duration) {
	if s.run != nil {
		s.run.Stop(grace)
	}
}

// planAddrs gives every service its addresses, whether it runs or not, so
// that each knows the others' before any starts.
func (s *Stack) planAddrs() error {
	s.addrs = map[string]Addrs{}
	addr := func(fixed string, offset, slot int) (string, error) {
		switch {
		case fixed != "":
			return fixed, nil
		case s.BasePort > 0:
			return fmt.Sprintf("127.0.0.1:%d", s.BasePort+offset+slot), nil
		}
		return FreeAddr()
	}
	for _, sv := range Services {
		if ext, ok := s.External[sv.Name]; ok && !s.runs(sv) {
			s.addrs[sv.Name] = Addrs{Listen: ext}
			continue
		}
		var a Addrs
		var err error
		fixed := map[string]string{"gateway": s.HTTPAddr, "devnats": s.NATSAddr}[sv.Name]
		if a.Listen, err = addr(fixed, 0, sv.Slot); err != nil {
			return err
		}
		if sv.Name != "devnats" {
			if a.Metrics, err = addr("", 10, sv.Slot); err != nil {
				return err
			}
		}
		if s.Pprof {
			if a.Pprof, err = addr("", 20, sv.Slot); err != nil {
				return err
			}
		}
		s.addrs[sv.Name] = a
	}
	return nil
}

// ProcessEnv is the environment of the named service in this stack:
// CommonEnv, its addresses, its own environment, then ServiceEnv.
func (s *Stack) ProcessEnv(sv Service) []string {
	a := s.addrs[sv.Name]
	env := s.CommonEnv()
	switch {
	case sv.HTTP:
		env = append(env, "DOCREPO_HTTP_ADDR="+a.Listen, "DOCREPO_GATEWAY_ADMIN_ADDR="+a.Metrics)
	case sv.Name != "devnats":
		env = append(env, "DOCREPO_GRPC_ADDR="+a.Listen, "DOCREPO_METRICS_ADDR="+a.Metrics)
	}
	if u := s.DatabaseURLs[sv.Name]; u != "" {
		env = append(env, "DATABASE_URL="+u)
	}
	if sv.Name == "search" {
		env = append(env, "DOCREPO_INDEX_DIR="+s.IndexDir())
	}
	if a.Pprof != "" {
		env = append(env, "DOCREPO_PPROF_ADDR="+a.Pprof)
	}
	if sv.Env != nil {
		env = append(env, sv.Env(s)...)
	}
	return append(env, s.ServiceEnv[sv.Name]...)
}

func (s *Stack) startService(sv Service) error {
	bin := s.Binaries[sv.Name]
	if bin == "" || !fileExists(bin) {
		return fmt.Errorf("launcher: %s is not built (%q missing): run make build", sv.Name, bin)
	}
	spec := Spec{Name: sv.Name, Path: bin, Env: s.ProcessEnv(sv), Output: s.Output}
	if s.PrefixLines {
		spec.Prefix = fmt.Sprintf("%-9s| ", sv.Name)
	}
	if sv.WritePath {
		spec.Nice = s.WriteNice
	}
	if a := s.addrs[sv.Name]; a.Pprof != "" && s.Log != nil {
		fmt.Fprintf(s.Log, "launcher: %s profiles at http://%s/debug/pprof/\n", sv.Name, a.Pprof)
	}
	return s.run.Start(spec)
}

func (s *Stack) wait() time.Duration {
	if s.Wait > 0 {
		return s.Wait
	}
	return 60 * time.Second
}

// waitListening waits until each named process accepts connections on its
// address; without supervision a process that exits first is an error.
func (s *Stack) waitListening(ctx context.Context, names ...string) error {
	for _, name := range names {
		addr := s.addrs[name].Listen
		err := s.poll(ctx, name, func() error {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("launcher: %s not listening on %s: %w", name, addr, err)
		}
	}
	return nil
}

// waitHealthy waits until the gateway answers /healthz with 200.
func (s *Stack) waitHealthy(ctx context.Context, name string) error {
	u := "http://" + s.addrs[name].Listen + "/healthz"
	err := s.poll(ctx, name, func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("launcher: %s not healthy at %s: %w", name, u, err)
	}
	return nil
}

// poll runs check until it succeeds, the wait passes, the context ends or
// (unsupervised) the process exits.
func (s *Stack) poll(ctx context.Context, name string, check func() error) error {
	deadline := time.Now().Add(s.wait())
	for {
		err := check()
		if err == nil {
			return nil
		}
		var exited <-chan struct{}
		if p := s.run.Process(name); p != nil && !s.Supervise {
			exited = p.Done()
		}
		select {
		case <-exited:
			p := s.run.Process(name)
			return fmt.Errorf("exited: %v", p.Err())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("not after %s", s.wait()), err)
		}
	}
}

// group runs processes without restarting them.
type group struct {
	mu    sync.Mutex
	procs []*Process
}

func (g *group) Start(spec Spec) error {
	p, err := Start(spec)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.procs = append(g.procs, p)
	g.mu.Unlock()
	return nil
}

func (g *group) Process(name string) *Process {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.procs {
		if p.Name() == name {
			return p
		}
	}
	return nil
}

// Stop stops the processes newest first; an unclean exit is logged to the
// process's output.
func (g *group) Stop(grace time.Duration) {
	g.mu.Lock()
	procs := g.procs
	g.procs = nil
	g.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].Stop(grace); err != nil && procs[i].spec.Output != nil {
			fmt.Fprintf(procs[i].spec.Output, "%s%v\n", procs[i].spec.Prefix, err)
		}
	}
}
