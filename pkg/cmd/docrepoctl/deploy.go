package main

// The deployment commands: health (the health check of the distroless
// images, which have no shell or curl) and bootstrap (the one-shot that
// prepares a database for the services: docker-compose.yml and the
// Kubernetes migrate Job run it).
//
//	docrepoctl health [-timeout 3s] [-service NAME] HOST:PORT   gRPC health check
//	docrepoctl health [-timeout 3s] http://HOST:PORT/readyz     HTTP check (2xx is healthy)
//	docrepoctl bootstrap [-check]                              migrate, ensure the admin and service users and keys

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/catalog"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/dbroles"
	"github.com/docrepo/docrepo/pkg/identity"
)

// deployEnv is what a deployment command gets. Unlike the other commands,
// these open the database themselves (health never does).
type deployEnv struct {
	settings
	dbURL  string
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// deployCommands are dispatched before the database is opened.
var deployCommands = map[string]func(ctx context.Context, e deployEnv) error{
	"health":    healthCmd,
	"bootstrap": bootstrapCmd,
	"import":    importCmd,  // import.go
	"bulk":      bulkCmd,    // bulk.go
	"trash":     trashCmd,   // bulk.go
	"audit":     auditCmd,   // audit.go
	"webhook":   webhookCmd, // webhook.go
}

// Environment variables of bootstrap: the tokens a previous run printed.
const (
	envServiceToken = "DOCREPO_SERVICE_TOKEN"
	envAdminToken   = "DOCREPO_ADMIN_TOKEN"
)

// healthCmd checks one process and fails unless it is healthy: a gRPC address
// gets a grpc.health.v1 Check (the whole server, or -service), a URL a GET
// that must answer 2xx (a URL without a path: its /readyz).
func healthCmd(ctx context.Context, e deployEnv) error {
	var (
		timeout time.Duration
		service string
	)
	pos, err := parseArgs("health", e.args, func(fs *flag.FlagSet) {
		fs.DurationVar(&timeout, "timeout", 3*time.Second, "time allowed for the check")
		fs.StringVar(&service, "service", "", "gRPC service name to check (default: the whole server)")
	})
	if err != nil {
		return err
	}
	if err := exactly("health", pos, 1); err != nil {
		return fmt.Errorf("%w (HOST:PORT for gRPC, http://HOST:PORT/PATH for HTTP)", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	target := pos[0]
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
		if u, err := url.Parse(target); err == nil && (u.Path == "" || u.Path == "/") && u.RawQuery == "" {
			target = strings.TrimSuffix(target, "/") + "/readyz"
		}
		return httpHealth(ctx, target, e.stdout)
	}
	creds, err := e.GRPCTLS.Client()
	if err != nil {
		return err
	}
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("health %s: %w", target, err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return fmt.Errorf("health %s: %w", target, err)
	}
	if st := resp.GetStatus(); st != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health %s: %s", target, st)
	}
	fmt.Fprintln(e.stdout, "SERVING")
	return nil
}

func httpHealth(ctx context.Context, url string, stdout io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("health %s: %s %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	fmt.Fprintln(stdout, resp.Status)
	return nil
}

// bootstrapCmd prepares a database for the services, idempotently:
//
//  1. applies the migrations (under the same advisory lock the services use);
//  2. makes sure DOCREPO_SERVICE_TOKEN, when set, is a valid service
//     credential named docrepo-service with scope internal (the indexer
//     reads every document with it);
//  3. makes sure the admin user exists (in the admin group) and that
//     DOCREPO_ADMIN_TOKEN, when set, is a valid API key of that user with
//     every public scope;
//  4. (-roles, the default) gives each service a Postgres role that owns
//     its schema and only reads identity (pkg/dbroles), keeping the
//     DOCREPO_<SERVICE>_DATABASE_URL values given that still log in and
//     printing new ones for the others: each service's DATABASE_URL.
//
// A token that is missing or not valid gets a new key, printed on stdout as
// NAME=TOKEN lines (env-file syntax) for the operator to keep; tokens that
// are valid are not printed again, so a second run prints nothing. With
// -check nothing is created: it migrates, then fails unless
// DOCREPO_SERVICE_TOKEN is valid (the gate that stops the services from
// starting with a token the indexer cannot use).
func bootstrapCmd(ctx context.Context, e deployEnv) error {
	var (
		check                  bool
		roles                  bool
		serviceUser, adminUser string
		adminGroups            string
	)
	pos, err := parseArgs("bootstrap", e.args, func(fs *flag.FlagSet) {
		fs.BoolVar(&check, "check", false, "create nothing: migrate, then verify "+envServiceToken+" (and with -roles every DOCREPO_<SERVICE>_DATABASE_URL)")
		fs.BoolVar(&roles, "roles", true, "give each service a Postgres role of its own that owns only its schema (pkg/dbroles); -roles=false for a database whose administrator cannot create roles (the services then share DATABASE_URL)")
		fs.StringVar(&serviceUser, "service-user", "docrepo-service", "name of the services' credential")
		fs.StringVar(&adminUser, "admin-user", "admin", "administrator user")
		fs.StringVar(&adminGroups, "admin-groups", "admin", "comma-separated groups of the administrator")
	})
	if err != nil {
		return err
	}
	if err := exactly("bootstrap", pos, 0); err != nil {
		return err
	}
	pool, err := database.Open(ctx, e.dbURL, catalog.Schema)
	if err != nil {
		return err
	}
	defer pool.Close()
	applied, err := database.Migrate(ctx, pool, adminSets...)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "bootstrap: applied %d migration(s)\n", len(applied))
	ids := identity.NewStore(pool)
	earlier := map[string]string{}
	for name, v := range e.roleURLs {
		if *v != "" {
			earlier[name] = *v
		}
	}
	if roles && !check {
		res, err := dbroles.Ensure(ctx, e.dbURL, dbroles.Options{Prefix: e.rolePrefix, URLs: earlier})
		if err != nil {
			return fmt.Errorf("bootstrap: %w", err)
		}
		for _, name := range res.New {
			fmt.Fprintf(e.stderr, "bootstrap: set a new password for role %s\n", dbroles.Role(e.rolePrefix, name))
			fmt.Fprintf(e.stdout, "%s=%s\n", roleURLEnv(name), res.URLs[name])
		}
	}

	serviceToken, adminToken := e.serviceToken, e.adminToken
	serviceScopes := []string{auth.ScopeInternal}
	adminScopes := []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite, auth.ScopeSearch}
	if check {
		tok := serviceToken
		if tok == "" {
			return fmt.Errorf("bootstrap: %s is not set: create it with `docrepoctl bootstrap` and give it to the services", envServiceToken)
		}
		if err := validCredential(ctx, ids, tok, serviceUser, serviceScopes); err != nil {
			return fmt.Errorf("bootstrap: %s: %w; run `docrepoctl bootstrap` for a new one", envServiceToken, err)
		}
		fmt.Fprintf(e.stderr, "bootstrap: %s is a valid service credential %s\n", envServiceToken, serviceUser)
		if roles {
			if err := dbroles.Check(ctx, e.rolePrefix, earlier); err != nil {
				return fmt.Errorf("bootstrap: the services' database roles: %w; run `docrepoctl bootstrap` for their URLs", err)
			}
			fmt.Fprintf(e.stderr, "bootstrap: every DOCREPO_<SERVICE>_DATABASE_URL logs in as its service's role\n")
		}
		return nil
	}
	if serviceToken != "" {
		if err := validCredential(ctx, ids, serviceToken, serviceUser, serviceScopes); err != nil {
			fmt.Fprintf(e.stderr, "bootstrap: %s: %v; creating a new service credential\n", envServiceToken, err)
			serviceToken = ""
		} else {
			fmt.Fprintf(e.stderr, "bootstrap: %s is a valid service credential %s; kept\n", envServiceToken, serviceUser)
		}
	}
	if serviceToken == "" {
		tok, cred, err := ids.CreateServiceCredential(ctx, serviceUser, serviceScopes, 0)
		if err != nil {
			return fmt.Errorf("bootstrap: service credential %s: %w", serviceUser, err)
		}
		fmt.Fprintf(e.stderr, "bootstrap: created service credential %d %s (scopes %s)\n", cred.ID, serviceUser, strings.Join(serviceScopes, ","))
		fmt.Fprintf(e.stdout, "%s=%s\n", envServiceToken, tok)
	}
	ensure := []struct {
		env, token, user string
		groups           []string
		scopes           []string
	}{
		{env: envAdminToken, token: adminToken, user: adminUser, groups: splitList(adminGroups), scopes: adminScopes},
	}
	for _, u := range ensure {
		if _, err := ids.CreateUser(ctx, u.user, u.groups); err == nil {
			fmt.Fprintf(e.stderr, "bootstrap: created user %s\n", u.user)
		} else if !errors.Is(err, identity.ErrExists) {
			return fmt.Errorf("bootstrap: user %s: %w", u.user, err)
		} else if len(u.groups) > 0 {
			if err := ids.AddUserToGroups(ctx, u.user, u.groups); err != nil {
				return fmt.Errorf("bootstrap: groups of %s: %w", u.user, err)
			}
		}
		if u.token != "" {
			err := validKey(ctx, ids, u.token, u.user, u.scopes)
			if err == nil {
				fmt.Fprintf(e.stderr, "bootstrap: %s is a valid key of %s; kept\n", u.env, u.user)
				continue
			}
			fmt.Fprintf(e.stderr, "bootstrap: %s: %v; creating a new key\n", u.env, err)
		}
		tok, key, err := ids.CreateKey(ctx, u.user, u.scopes, 0)
		if err != nil {
			return fmt.Errorf("bootstrap: key of %s: %w", u.user, err)
		}
		fmt.Fprintf(e.stderr, "bootstrap: created key %d for %s (scopes %s)\n", key.ID, u.user, strings.Join(u.scopes, ","))
		fmt.Fprintf(e.stdout, "%s=%s\n", u.env, tok)
	}
	return nil
}

// roleURLEnv is the variable holding service's DATABASE_URL for bootstrap.
func roleURLEnv(service string) string {
	return "DOCREPO_" + strings.ToUpper(service) + "_DATABASE_URL"
}

// validCredential reports why token is not a usable service credential
// named name with every scope.
func validCredential(ctx context.Context, ids *identity.Store, token, name string, scopes []string) error {
	p, err := ids.Authenticate(ctx, token)
	if err != nil {
		return fmt.Errorf("not a valid credential (%v)", err)
	}
	if p.Service != name {
		return fmt.Errorf("not the service credential %s", name)
	}
	for _, s := range scopes {
		if !p.HasScope(s) {
			return fmt.Errorf("the credential lacks scope %s", s)
		}
	}
	return nil
}

// validKey reports why token is not a usable key of user with every scope.
func validKey(ctx context.Context, ids *identity.Store, token, user string, scopes []string) error {
	p, err := ids.Authenticate(ctx, token)
	if err != nil {
		return fmt.Errorf("not a valid key (%v)", err)
	}
	if p.Username != user {
		return fmt.Errorf("a key of %s, not of %s", p.Username, user)
	}
	for _, s := range scopes {
		if !p.HasScope(s) {
			return fmt.Errorf("the key lacks scope %s", s)
		}
	}
	return nil
}
