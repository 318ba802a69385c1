// Package config is docrepo's one registry of settings. Every setting a
// command accepts is registered once, in code, on a Loader: its flag, its
// environment variable, its default and its meaning (Loader.String, Int,
// Int64, Float64, Bool, Duration). A setting can be given either way; flags
// win.
//
// The reference users read, docs/configuration.md, is generated from these
// registrations: each command's -h lists what it registers (Usage; read
// back by ParseUsage), and `make config-docs` (go run ./pkg/cmd/configdoc)
// writes the union. gateway/deploytest fails when the page is stale, when a
// deployment file sets a variable its command does not register, and when
// one variable is registered in two places: a setting several commands
// share is registered by one function they all call (RegisterCommon,
// RegisterLogging, ServiceAddr, ...).
//
// Adding a setting: register it in the Register method of the command's
// Config (or of the Settings of the package that reads it, like
// indexing.Settings), with a usage that states its meaning and unit, then
// run `make config-docs` and commit docs/configuration.md with it.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/docrepo/docrepo/pkg/dbroles"
	"github.com/docrepo/docrepo/pkg/grpctls"
)

// Loader collects settings and parses them.
type Loader struct {
	fs     *flag.FlagSet
	getenv func(string) string
	errs   []error
	vars   []Var
}

// Var describes one registered setting.
type Var struct {
	Flag string
	Env  string
	// Type is the value's type as -h names it: string, int, int64, float,
	// bool or duration (Go syntax: 90s, 5m, 1h30m).
	Type string
	// Default is the default in code (not the environment's value), as
	// the flag package prints it.
	Default string
	Usage   string
}

// Vars lists every registered setting in registration order.
func (l *Loader) Vars() []Var { return append([]Var(nil), l.vars...) }

// New returns a loader for the program name, reading variables via getenv.
func New(name string, getenv func(string) string) *Loader {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &Loader{fs: fs, getenv: getenv}
}

// add records a setting; the usage the flag carries names its variable.
func (l *Loader) add(v Var) string {
	for _, o := range l.vars {
		if o.Env == v.Env {
			l.errs = append(l.errs, fmt.Errorf("config: %s registered twice", v.Env))
		}
	}
	l.vars = append(l.vars, v)
	return fmt.Sprintf("%s (env %s)", v.Usage, v.Env)
}

// fromEnv returns the environment's value of env, parsed, or def when the
// variable is unset or empty; a value that does not parse is an error of
// Parse.
func fromEnv[T any](l *Loader, env string, def T, parse func(string) (T, error), want string) T {
	v := l.getenv(env)
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("%s=%q: not %s", env, v, want))
		return def
	}
	return x
}

// String registers a string setting.
func (l *Loader) String(p *string, name, env, def, usage string) {
	u := l.add(Var{Flag: name, Env: env, Type: "string", Default: def, Usage: usage})
	l.fs.StringVar(p, name, fromEnv(l, env, def, func(s string) (string, error) { return s, nil }, ""), u)
}

// Int registers an int setting.
func (l *Loader) Int(p *int, name, env string, def int, usage string) {
	u := l.add(Var{Flag: name, Env: env, Type: "int", Default: strconv.Itoa(def), Usage: usage})
	l.fs.IntVar(p, name, fromEnv(l, env, def, strconv.Atoi, "an integer"), u)
}

// Int64 registers an int64 setting.
func (l *Loader) Int64(p *int64, name, env string, def int64, usage string) {
	u := l.add(Var{Flag: name, Env: env, Type: "int", Default: strconv.FormatInt(def, 10), Usage: usage})
	parse := func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
	l.fs.Int64Var(p, name, fromEnv(l, env, def, parse, "an integer"), u)
}

// Float64 registers a floating-point setting.
func (l *Loader) Float64(p *float64, name, env string, def float64, usage string) {
	u := l.add(Var{Flag: name, Env: env, Type: "float", Default: strconv.FormatFloat(def, 'g', -1, 64), Usage: usage})
	parse := func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
	l.fs.Float64Var(p, name, fromEnv(l, env, def, parse, "a number"), u)
}

// Bool registers a boolean setting.
func (l *Loader) Bool(p *bool, name, env string, def bool, usage string) {
	u := l.add(Var{Flag: name, Env: env, Type: "bool", Default: strconv.FormatBool(def), Usage: usage})
	l.fs.BoolVar(p, name, fromEnv(l, env, def, strconv.ParseBool, "a boolean"), u)
}

// Duration registers a duration setting (Go syntax, e.g. 30s).
func (l *Loader) Duration(p *time.Duration, name, env string, def time.Duration, usage string) {
	u := l.add(Var{Flag: name, Env: env, Type: "duration", Default: def.String(), Usage: usage})
	l.fs.DurationVar(p, name, fromEnv(l, env, def, time.ParseDuration, "a duration"), u)
}

// Parse parses args. It reports bad environment values and bad flags.
func (l *Loader) Parse(args []string) error {
	if err := l.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return fmt.Errorf("usage of %s:\n%s", l.fs.Name(), l.Usage())
		}
		return err
	}
	return errors.Join(l.errs...)
}

// Usage describes every setting, a line each, in registration order:
//
//	-NAME TYPE  USAGE (env VAR) (default "VALUE")
//
// where VALUE is the default after the environment. ParseUsage reads it
// back.
func (l *Loader) Usage() string {
	var b strings.Builder
	for _, v := range l.vars {
		f := l.fs.Lookup(v.Flag)
		fmt.Fprintf(&b, "  -%s %s  %s (default %q)\n", f.Name, v.Type, f.Usage, f.DefValue)
	}
	return b.String()
}

var usageLine = regexp.MustCompile(`^  -([a-z0-9][a-z0-9-]*) (string|int|float|bool|duration)  (.*) \(env ([A-Z][A-Z0-9_]*)\) \(default ("(?:[^"\\]|\\.)*")\)$`)

// ParseUsage reads back the settings a command's -h printed (Usage). Run
// with an empty environment, the defaults are the code's. Lines that do not
// describe a setting are skipped; a line that starts like one but does not
// parse is an error, so that a change of format cannot go unnoticed.
func ParseUsage(text string) ([]Var, error) {
	var out []Var
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "  -") {
			continue
		}
		m := usageLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("config: not a setting's usage line: %q", line)
		}
		def, err := strconv.Unquote(m[5])
		if err != nil {
			return nil, fmt.Errorf("config: default of %q: %w", line, err)
		}
		out = append(out, Var{Flag: m[1], Type: m[2], Usage: m[3], Env: m[4], Default: def})
	}
	return out, nil
}

// Common are the settings every service has.
type Common struct {
	DatabaseURL string
	GRPCAddr    string
	HTTPAddr    string
	LogLevel    string
	LogFormat   string
	NATSURL     string
	// NATSUser and NATSPassword, or NATSCreds (a .creds file: JWT and
	// NKey), authenticate to NATS when set.
	NATSUser     string
	NATSPassword string
	NATSCreds    string
	// NATSReplicas is the replica count of the streams docrepo creates
	// (1 on a single server; 3 on a JetStream cluster).
	NATSReplicas int
	Migrate      bool
	// PprofAddr, when set, serves Go's runtime profiles (pkg/profiling).
	PprofAddr string
	// GRPCTLS is the TLS of gRPC between the processes (pkg/grpctls).
	GRPCTLS grpctls.Config
	// Tracing is the export of OpenTelemetry traces (pkg/tracing).
	Tracing Tracing
}

// Tracing is the export of OpenTelemetry traces (pkg/tracing.Setup).
type Tracing struct {
	Exporter    string
	SampleRatio float64
}

// RegisterLogging registers the log level and format (pkg/logging).
func (l *Loader) RegisterLogging(level, format *string) {
	l.String(level, "log-level", "DOCREPO_LOG_LEVEL", "info", "log level: debug, info, warn, error")
	l.String(format, "log-format", "DOCREPO_LOG_FORMAT", "json", "log format: json or text")
}

// RegisterTracing registers the trace export settings. The OpenTelemetry
// SDK reads the standard OTEL_* variables itself (the OTLP endpoint).
func (l *Loader) RegisterTracing(c *Tracing) {
	l.String(&c.Exporter, "tracing-exporter", "DOCREPO_TRACING_EXPORTER", "none", "OpenTelemetry trace export: none, otlp-grpc, otlp-http or stdout (OTEL_EXPORTER_OTLP_ENDPOINT and the other standard OTEL_* variables configure the OTLP exporters)")
	l.Float64(&c.SampleRatio, "tracing-sample-ratio", "DOCREPO_TRACING_SAMPLE_RATIO", 1, "fraction of new traces exported, 0 to 1 (a caller's sampled traceparent is followed)")
}

// RegisterPprof registers the address of Go's runtime profiles.
func (l *Loader) RegisterPprof(p *string) {
	l.String(p, "pprof-addr", "DOCREPO_PPROF_ADDR", "", "listen address for Go's pprof profiles (empty: off; keep it private)")
}

// ServiceAddrs are the default gRPC addresses of docrepo's services, the
// ones `make run` uses: each service listens on its own, and its callers
// dial it there.
var ServiceAddrs = map[string]string{
	"document": "127.0.0.1:9101",
	"folder":   "127.0.0.1:9102",
	"search":   "127.0.0.1:9103",
	"schema":   "127.0.0.1:9104",
	"indexer":  "127.0.0.1:9105",
}

// ServiceAddr registers the gRPC address another process dials service at
// (one of ServiceAddrs): flag -SERVICE-addr, variable DOCREPO_SERVICE_ADDR.
func (l *Loader) ServiceAddr(p *string, service string) {
	def, ok := ServiceAddrs[service]
	if !ok {
		l.errs = append(l.errs, fmt.Errorf("config: no service %q", service))
	}
	l.String(p, service+"-addr", "DOCREPO_"+strings.ToUpper(service)+"_ADDR", def, service+" service gRPC address")
}

// RegisterGRPCTLS registers the gRPC TLS settings (pkg/grpctls) into c.
func (l *Loader) RegisterGRPCTLS(c *grpctls.Config) {
	l.String(&c.CertFile, "grpc-tls-cert", grpctls.EnvCert, "", "this process's gRPC TLS certificate (PEM); with a key, servers serve TLS and clients present it")
	l.String(&c.KeyFile, "grpc-tls-key", grpctls.EnvKey, "", "the key of the gRPC TLS certificate (PEM)")
	l.String(&c.CAFile, "grpc-tls-ca", grpctls.EnvCA, "", "CA bundle (PEM) of docrepo's gRPC servers: clients dial with TLS; servers require client certificates")
}

// NATSOptions are the connection options of the NATS settings: the
// credentials, when set.
func (c Common) NATSOptions() []nats.Option {
	var opts []nats.Option
	if c.NATSUser != "" || c.NATSPassword != "" {
		opts = append(opts, nats.UserInfo(c.NATSUser, c.NATSPassword))
	}
	if c.NATSCreds != "" {
		opts = append(opts, nats.UserCredentials(c.NATSCreds))
	}
	return opts
}

// RegisterNATS registers the NATS server URL and credentials into c.
func (l *Loader) RegisterNATS(c *Common) {
	l.String(&c.NATSURL, "nats-url", "NATS_URL", "nats://127.0.0.1:4222", "NATS server URL")
	l.String(&c.NATSUser, "nats-user", "NATS_USER", "", "NATS user name (with NATS_PASSWORD)")
	l.String(&c.NATSPassword, "nats-password", "NATS_PASSWORD", "", "NATS password")
	l.String(&c.NATSCreds, "nats-creds", "NATS_CREDS", "", "NATS credentials file (JWT and NKey seed)")
}

// RegisterServiceToken registers the token of the service credential
// docrepo's processes call each other with.
func (l *Loader) RegisterServiceToken(p *string) {
	l.String(p, "service-token", "DOCREPO_SERVICE_TOKEN", "", "token of the service credential docrepo-service (scope internal, drs_...) the indexing pipeline reads documents with and the folder service tells the document service of deleted folders with (FoldersDeleted; without it a client may upload into a folder it just deleted until the folder.deleted event arrives); docrepoctl bootstrap creates it and keeps a valid one it is given, docrepoctl credential create rotates it")
}

// Args are the arguments left after the flags (a subcommand and its
// arguments).
func (l *Loader) Args() []string { return l.fs.Args() }

// RegisterDatabaseURL registers the Postgres connection URL.
func (l *Loader) RegisterDatabaseURL(p *string) {
	l.String(p, "database-url", "DATABASE_URL", "", "Postgres connection URL (devstack: empty starts a private cluster under its data dir); every statement is bounded by a 30 s statement_timeout unless the URL sets one (?statement_timeout=..., 0 for none); migrations are not bounded")
}

// RegisterEmbedModelDir registers the local embedder's model directory,
// which the processes that embed read and docrepoctl model pull fills.
func (l *Loader) RegisterEmbedModelDir(p *string) {
	l.String(p, "embed-model-dir", "DOCREPO_EMBED_MODEL_DIR", "", "local embedder: directory with config.json, model.safetensors and tokenizer.json or vocab.txt of a BERT-family sentence-embedding model (all-MiniLM-L6-v2, bge-small-en-v1.5, e5-small-v2, ...); docrepoctl model pull fills it")
}

// RegisterDBRolePrefix registers the prefix of the services' Postgres
// roles (pkg/dbroles), which docrepoctl bootstrap and devstack create.
func (l *Loader) RegisterDBRolePrefix(p *string) {
	l.String(p, "db-role-prefix", "DOCREPO_DB_ROLE_PREFIX", dbroles.DefaultPrefix, "prefix of the services' Postgres roles that docrepoctl bootstrap (and make run) create (roles are global to a Postgres server: one prefix per installation sharing it)")
}

// RegisterGatewayAddr registers the gateway's REST listen address.
func (l *Loader) RegisterGatewayAddr(p *string) {
	l.String(p, "http-addr", "DOCREPO_HTTP_ADDR", "127.0.0.1:8080", "the gateway's REST listen address")
}

// DefaultMaxUploadBytes is the default upload limit (10 GiB).
const DefaultMaxUploadBytes = 10 << 30

// RegisterMaxUploadBytes registers the upload size limit, which the gateway
// enforces as a body streams in and the document service again.
func (l *Loader) RegisterMaxUploadBytes(p *int64) {
	l.Int64(p, "max-upload-bytes", "DOCREPO_MAX_UPLOAD_BYTES", DefaultMaxUploadBytes, "largest accepted upload in bytes (413 above)")
}

// RegisterCommon registers the common settings of the service listening on
// its gRPC address from ServiceAddrs and serving metrics and health on
// httpAddr.
func (l *Loader) RegisterCommon(c *Common, service, httpAddr string) {
	l.RegisterDatabaseURL(&c.DatabaseURL)
	l.String(&c.GRPCAddr, "grpc-addr", "DOCREPO_GRPC_ADDR", ServiceAddrs[service], "gRPC listen address")
	l.String(&c.HTTPAddr, "http-addr", "DOCREPO_METRICS_ADDR", httpAddr, "HTTP listen address for /metrics, /healthz and /readyz (empty: off)")
	l.RegisterLogging(&c.LogLevel, &c.LogFormat)
	l.RegisterNATS(c)
	l.Int(&c.NATSReplicas, "nats-replicas", "DOCREPO_NATS_REPLICAS", 1, "replicas of the JetStream streams docrepo creates (3 on a JetStream cluster)")
	l.Bool(&c.Migrate, "migrate", "DOCREPO_MIGRATE", true, "apply database migrations at start-up")
	l.RegisterPprof(&c.PprofAddr)
	l.RegisterGRPCTLS(&c.GRPCTLS)
	l.RegisterTracing(&c.Tracing)
}
