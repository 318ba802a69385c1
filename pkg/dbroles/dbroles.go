// Package dbroles makes the database enforce docrepo's walls: each service
// connects as a Postgres role of its own that owns its schema and nothing
// else (docs/architecture.md, "Who owns which table"). pkg/walls checks
// that the code keeps to its tables; with these roles, a statement that
// strays is refused by Postgres too (permission denied), whatever the code.
//
// Ensure, run by the administrator (docrepoctl bootstrap -roles, make run's
// devstack), creates for every service of Services a login role
// <prefix><service> (docrepo_document, …), makes it the owner of the
// service's schema (creating the schema, or handing over an existing one
// and every table and function in it), and grants it what every service
// needs of the identity schema: to read it (authentication, the audit
// feed's identity part) and to update last_used_at of API keys and service
// credentials. Nothing else: no other schema, no CREATE on the database,
// so a service can neither read another's tables nor make a schema.
//
// The identity schema stays the administrator's: its migrations are
// applied by bootstrap, and a service that finds them applied skips them
// (database.Migrate does no DDL for a complete set).
//
// Each role's password is random; Ensure returns every service's
// DATABASE_URL (the administrator's URL with that role and password) and
// keeps the URLs of an earlier run that still log in as their role.
package dbroles

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Service is one service's database identity.
type Service struct {
	// Name is the service (document, folder, …); the role is
	// <prefix><Name>.
	Name string
	// Schema is the Postgres schema it owns.
	Schema string
}

// Services are docrepo's services that connect to Postgres, each with the
// schema it owns.
var Services = []Service{
	{Name: "document", Schema: "document"},
	{Name: "folder", Schema: "folder"},
	{Name: "schema", Schema: "schema"},
	{Name: "search", Schema: "search"},
	{Name: "indexer", Schema: "indexer"},
}

// DefaultPrefix is the prefix of the roles' names.
const DefaultPrefix = "docrepo_"

// identitySchema is the administrator's schema every service reads.
const identitySchema = "identity"

// lockID serialises Ensure runs (two bootstraps at once).
const lockID = 0x646f7267 // "dorg"

var validName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,50}$`)

// Role is the role name of service for prefix ("" is DefaultPrefix).
func Role(prefix, service string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + service
}

// Options tune Ensure.
type Options struct {
	// Prefix of the roles' names; "" is DefaultPrefix. Roles are global
	// to a Postgres server: databases of several installations on one
	// server need prefixes of their own.
	Prefix string
	// URLs are the services' DATABASE_URLs from an earlier run, by
	// service name; one that still logs in as its role is kept (its
	// password is not changed).
	URLs map[string]string
}

// Result is what Ensure did.
type Result struct {
	// URLs is every service's DATABASE_URL, by service name.
	URLs map[string]string
	// New lists the services whose URL is new (a password set now): the
	// ones an operator must store.
	New []string
}

// Ensure creates or updates every service's role, schema ownership and
// grants in the database adminURL reaches, as that URL's user (a superuser,
// or a role with CREATEROLE that owns the database), idempotently.
func Ensure(ctx context.Context, adminURL string, opts Options) (Result, error) {
	pool, err := pgxpool.New(ctx, adminURL)
	if err != nil {
		return Result{}, fmt.Errorf("dbroles: %w", err)
	}
	defer pool.Close()
	res := Result{URLs: map[string]string{}}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockID); err != nil {
			return err
		}
		var db string
		var super bool
		if err := tx.QueryRow(ctx, `SELECT current_database(), usesuper FROM pg_user WHERE usename = current_user`).Scan(&db, &super); err != nil {
			return fmt.Errorf("who am I: %w", err)
		}
		var identityExists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, identitySchema).Scan(&identityExists); err != nil {
			return err
		}
		if !identityExists {
			return errors.New("the identity schema does not exist: apply its migrations first (docrepoctl bootstrap does)")
		}
		for _, s := range Services {
			role := Role(opts.Prefix, s.Name)
			if !validName.MatchString(role) || !validName.MatchString(s.Schema) {
				return fmt.Errorf("invalid role or schema name %q/%q", role, s.Schema)
			}
			u, fresh, err := ensureRole(ctx, tx, adminURL, role, opts.URLs[s.Name])
			if err != nil {
				return fmt.Errorf("role %s: %w", role, err)
			}
			res.URLs[s.Name] = u
			if fresh {
				res.New = append(res.New, s.Name)
			}
			if !super {
				// A non-superuser administrator keeps working on the
				// schemas it hands over (docrepoctl doctype writes the
				// schema service's tables) as a member of their owners.
				if _, err := tx.Exec(ctx, `GRANT `+ident(role)+` TO CURRENT_USER`); err != nil {
					return fmt.Errorf("role %s: make the administrator a member: %w", role, err)
				}
			}
			if err := grant(ctx, tx, db, role, s.Schema); err != nil {
				return fmt.Errorf("role %s: %w", role, err)
			}
		}
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("dbroles: %w", err)
	}
	return res, nil
}

// ensureRole creates role, or keeps it; its URL is the earlier one when
// that still logs in as role, else a new password is set.
func ensureRole(ctx context.Context, tx pgx.Tx, adminURL, role, earlier string) (string, bool, error) {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, role).Scan(&exists); err != nil {
		return "", false, err
	}
	if exists && earlier != "" && LogsInAs(ctx, earlier, role) == nil {
		return earlier, false, nil
	}
	password, err := newPassword()
	if err != nil {
		return "", false, err
	}
	// Passwords cannot be bind parameters; this one is base64url only.
	verb := "CREATE"
	if exists {
		verb = "ALTER"
	}
	if _, err := tx.Exec(ctx, verb+` ROLE `+ident(role)+` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '`+password+`'`); err != nil {
		return "", false, err
	}
	u, err := withUser(adminURL, role, password)
	return u, true, err
}

// grant gives role its schema and its share of identity.
func grant(ctx context.Context, tx pgx.Tx, db, role, schema string) error {
	r := ident(role)
	var owner *string
	if err := tx.QueryRow(ctx, `SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = $1`, schema).Scan(&owner); err != nil &&
		!errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	stmts := []string{`GRANT CONNECT ON DATABASE ` + ident(db) + ` TO ` + r}
	switch {
	case owner == nil:
		stmts = append(stmts, `CREATE SCHEMA `+ident(schema)+` AUTHORIZATION `+r)
	case *owner != role:
		// An installation from before the roles.
		stmts = append(stmts, `ALTER SCHEMA `+ident(schema)+` OWNER TO `+r)
	}
	// Hand over whatever in the schema the role does not own yet: every
	// table and function of an installation from before the roles, or
	// what the administrator's migrations made there since (the schema
	// service's tables are migrated by docrepoctl). A table takes its
	// indexes and serial sequences along.
	rows, err := tx.Query(ctx, `SELECT format('ALTER TABLE %I.%I OWNER TO %I', n.nspname, c.relname, $2::text)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND pg_get_userbyid(c.relowner) <> $2
		UNION ALL
		SELECT format('ALTER FUNCTION %I.%I(%s) OWNER TO %I', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid), $2::text)
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = $1 AND pg_get_userbyid(p.proowner) <> $2`, schema, role)
	if err != nil {
		return err
	}
	handOver, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	stmts = append(stmts, handOver...)
	id := ident(identitySchema)
	stmts = append(stmts,
		`GRANT USAGE ON SCHEMA `+id+` TO `+r,
		`GRANT SELECT ON ALL TABLES IN SCHEMA `+id+` TO `+r,
		`ALTER DEFAULT PRIVILEGES IN SCHEMA `+id+` GRANT SELECT ON TABLES TO `+r,
		`GRANT UPDATE (last_used_at) ON identity.api_keys, identity.service_credentials TO `+r,
	)
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("%.60s…: %w", s, err)
		}
	}
	return nil
}

// LogsInAs fails unless dbURL connects and its session is role.
func LogsInAs(ctx context.Context, dbURL, role string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var user string
	if err := conn.QueryRow(ctx, `SELECT current_user`).Scan(&user); err != nil {
		return err
	}
	if user != role {
		return fmt.Errorf("connects as %s, not %s", user, role)
	}
	return nil
}

// Check fails unless every service of Services has a URL in urls that
// logs in as its role (docrepoctl bootstrap -check -roles).
func Check(ctx context.Context, prefix string, urls map[string]string) error {
	var errs []error
	for _, s := range Services {
		u := urls[s.Name]
		if u == "" {
			errs = append(errs, fmt.Errorf("%s: no database URL", s.Name))
			continue
		}
		if err := LogsInAs(ctx, u, Role(prefix, s.Name)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Names lists the services' names.
func Names() []string {
	var out []string
	for _, s := range Services {
		out = append(out, s.Name)
	}
	return slices.Clip(out)
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

func newPassword() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// withUser is u with its user and password replaced.
func withUser(raw, user, password string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("the administrator's DATABASE_URL must be a postgres:// URL to derive the services' from")
	}
	u.User = url.UserPassword(user, password)
	return u.String(), nil
}
