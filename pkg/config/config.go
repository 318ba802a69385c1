// Package config reads process configuration from command-line flags whose
// defaults come from environment variables, so that the same setting can be
// given either way (flags win). Every setting is documented in the README's
// configuration reference with its variable name.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

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
	Flag  string
	Env   string
	Usage string
}

// Vars lists every registered setting in registration order (for the
// configuration reference and for checking deployment files against the
// code).
func (l *Loader) Vars() []Var { return append([]Var(nil), l.vars...) }

// New returns a loader for the program name, reading variables via getenv.
func New(name string, getenv func(string) string) *Loader {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &Loader{fs: fs, getenv: getenv}
}

func (l *Loader) usage(env, usage string) string {
	for _, v := range l.vars {
		if v.Env == env {
			l.errs = append(l.errs, fmt.Errorf("config: %s registered twice", env))
		}
	}
	return fmt.Sprintf("%s (env %s)", usage, env)
}

// String registers a string setting.
func (l *Loader) String(p *string, name, env, def, usage string) {
	if v := l.getenv(env); v != "" {
		def = v
	}
	l.fs.StringVar(p, name, def, l.usage(env, usage))
	l.vars = append(l.vars, Var{Flag: name, Env: env, Usage: usage})
}

// Int registers an int setting.
func (l *Loader) Int(p *int, name, env string, def int, usage string) {
	if v := l.getenv(env); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("%s=%q: not an integer", env, v))
		} else {
			def = n
		}
	}
	l.fs.IntVar(p, name, def, l.usage(env, usage))
	l.vars = append(l.vars, Var{Flag: name, Env: env, Usage: usage})
}

// Int64 registers an int64 setting.
func (l *Loader) Int64(p *int64, name, env string, def int64, usage string) {
	if v := l.getenv(env); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("%s=%q: not an integer", env, v))
		} else {
			def = n
		}
	}
	l.fs.Int64Var(p, name, def, l.usage(env, usage))
	l.vars = append(l.vars, Var{Flag: name, Env: env, Usage: usage})
}

// Float64 registers a floating-point setting.
func (l *Loader) Float64(p *float64, name, env string, def float64, usage string) {
	if v := l.getenv(env); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("%s=%q: not a number", env, v))
		} else {
			def = f
		}
	}
	l.fs.Float64Var(p, name, def, l.usage(env, usage))
	l.vars = append(l.vars, Var{Flag: name, Env: env, Usage: usage})
}

// Bool registers a boolean setting.
func (l *Loader) Bool(p *bool, name, env string, def bool, usage string) {
	if v := l.getenv(env); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("%s=%q: not a boolean", env, v))
		} else {
			def = b
		}
	}
	l.fs.BoolVar(p, name, def, l.usage(env, usage))
	l.vars = append(l.vars, Var{Flag: name, Env: env, Usage: usage})
}

// Duration registers a duration setting (Go syntax, e.g. 30s).
func (l *Loader) Duration(p *time.Duration, name, env string, def time.Duration, usage string) {
	if v := l.getenv(env); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("%s=%q: not a duration", env, v))
		} else {
			def = d
		}
	}
	l.fs.DurationVar(p, name, def, l.usage(env, usage))
	l.vars = append(l.vars, Var{Flag: name, Env: env, Usage: usage})
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

// Usage describes every setting.
func (l *Loader) Usage() string {
	var out string
	l.fs.VisitAll(func(f *flag.Flag) {
		out += fmt.Sprintf("  -%s  %s (default %q)\n", f.Name, f.Usage, f.DefValue)
	})
	return out
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

// RegisterCommon registers the common settings with the given default gRPC
// and metrics/health HTTP addresses.
func (l *Loader) RegisterCommon(c *Common, grpcAddr, httpAddr string) {
	l.String(&c.DatabaseURL, "database-url", "DATABASE_URL", "", "Postgres connection URL")
	l.String(&c.GRPCAddr, "grpc-addr", "DOCREPO_GRPC_ADDR", grpcAddr, "gRPC listen address")
	l.String(&c.HTTPAddr, "http-addr", "DOCREPO_METRICS_ADDR", httpAddr, "HTTP listen address for /metrics, /healthz and /readyz (empty: off)")
	l.String(&c.LogLevel, "log-level", "DOCREPO_LOG_LEVEL", "info", "log level: debug, info, warn, error")
	l.String(&c.LogFormat, "log-format", "DOCREPO_LOG_FORMAT", "json", "log format: json or text")
	l.String(&c.NATSURL, "nats-url", "NATS_URL", "nats://127.0.0.1:4222", "NATS server URL")
	l.String(&c.NATSUser, "nats-user", "NATS_USER", "", "NATS user name (with NATS_PASSWORD)")
	l.String(&c.NATSPassword, "nats-password", "NATS_PASSWORD", "", "NATS password")
	l.String(&c.NATSCreds, "nats-creds", "NATS_CREDS", "", "NATS credentials file (JWT and NKey seed)")
	l.Int(&c.NATSReplicas, "nats-replicas", "DOCREPO_NATS_REPLICAS", 1, "replicas of the JetStream streams docrepo creates (3 on a JetStream cluster)")
	l.Bool(&c.Migrate, "migrate", "DOCREPO_MIGRATE", true, "apply database migrations at start-up")
	l.String(&c.PprofAddr, "pprof-addr", "DOCREPO_PPROF_ADDR", "", "listen address for Go's pprof profiles (empty: off; keep it private)")
	l.RegisterGRPCTLS(&c.GRPCTLS)
}
