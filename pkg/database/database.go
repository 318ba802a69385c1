// Package database opens docrepo's Postgres pools (pgx/v5) and applies
// migrations.
//
// Every service owns its data: its tables live in a Postgres schema of its
// own (document, folder, schema; identity for the users, groups and keys
// every service authenticates with), and its migrations are a MigrationSet
// it carries and applies itself at start-up. A service's pool has
// search_path set to its schema, so its SQL names its own tables unqualified
// and cannot reach another service's tables by accident: those are only ever
// reached through the owning service's gRPC API (docs/architecture.md).
//
// Migrations are plain SQL files named NNNN_<what>.sql. Migrate applies the
// missing ones of each set in order, each in its own transaction with the
// set's schema as search_path, records them in <schema>.schema_migrations
// (per component, since a schema can hold several sets — the outbox table
// is a set of its own in each service that writes events), and does it all
// under an advisory lock, so that several processes starting at once apply
// each migration exactly once.
package database

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrateLockID is the advisory lock key serialising migrations.
const migrateLockID = 0x646f6372 // "docr"

// DefaultStatementTimeout bounds every statement of a pool unless the URL
// sets statement_timeout itself (e.g. ?statement_timeout=0 for none): a
// stuck query fails instead of holding a connection and a request for
// ever. Migrations are not bounded.
const DefaultStatementTimeout = "30s"

// Open connects a pool to url and checks the connection. With schema set,
// every connection's search_path is that schema alone.
func Open(ctx context.Context, url string, schema string) (*pgxpool.Pool, error) {
	if url == "" {
		return nil, errors.New("database: DATABASE_URL is empty")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database: parse url: %w", err)
	}
	if cfg.MaxConns < 8 {
		cfg.MaxConns = 8
	}
	cfg.MaxConnIdleTime = 5 * time.Minute
	if _, set := cfg.ConnConfig.RuntimeParams["statement_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = DefaultStatementTimeout
	}
	if schema != "" {
		if !validSchema.MatchString(schema) {
			return nil, fmt.Errorf("database: invalid schema name %q", schema)
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: connect: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("database: ping: %w", err)
	}
	return pool, nil
}

// validSchema is what a schema (and component) name may be: it is spliced
// into SQL as an identifier.
var validSchema = regexp.MustCompile(`^[a-z][a-z0-9_]{0,40}$`)

// MigrationSet is one owner's ordered migrations.
type MigrationSet struct {
	// Schema is the Postgres schema the migrations run in (and create).
	Schema string
	// Component names the set within the schema (e.g. "document" and
	// "outbox" in schema document).
	Component string
	// FS holds the SQL files NNNN_<what>.sql at its root.
	FS fs.FS
	// With are sets applied right after this one wherever it is applied:
	// its companions in the same schema, such as the identity schema's
	// audit log, which the identity code writes.
	With []MigrationSet
}

// Expand lists sets in the order Migrate applies them: each one followed
// by its With sets (and theirs).
func Expand(sets []MigrationSet) []MigrationSet {
	var out []MigrationSet
	for _, s := range sets {
		out = append(out, s)
		out = append(out, Expand(s.With)...)
	}
	return out
}

// Embedded is the set of the SQL files in the directory migrations of
// files (a package's //go:embed migrations/*.sql).
func Embedded(files fs.FS, schema, component string) MigrationSet {
	sub, err := fs.Sub(files, "migrations")
	if err != nil {
		panic(err) // only for an invalid literal path
	}
	return MigrationSet{Schema: schema, Component: component, FS: sub}
}

// Migration is one SQL file of a set.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the set's migrations in order.
func (s MigrationSet) Migrations() ([]Migration, error) {
	if !validSchema.MatchString(s.Schema) || !validSchema.MatchString(s.Component) {
		return nil, fmt.Errorf("database: invalid migration set %q/%q", s.Schema, s.Component)
	}
	entries, err := fs.ReadDir(s.FS, ".")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		if !ok || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("database: bad migration file name %q", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("database: bad migration version in %q", name)
		}
		body, err := fs.ReadFile(s.FS, name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("database: duplicate migration version %d in %s/%s", out[i].Version, s.Schema, s.Component)
		}
	}
	return out, nil
}

// Querier is what Migrate needs: one connection it can lock on.
type Querier interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// Applied names one migration Migrate applied.
type Applied struct {
	Schema, Component, Name string
}

func (a Applied) String() string { return a.Schema + "/" + a.Component + "/" + a.Name }

// Migrate applies, set by set in the order given (each followed by its
// With sets), every migration not yet recorded in its schema's
// schema_migrations. It returns what it applied.
func Migrate(ctx context.Context, pool Querier, sets ...MigrationSet) ([]Applied, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("database: acquire: %w", err)
	}
	defer conn.Release()
	// Waiting for another process's migrations, and the migrations
	// themselves, may take longer than the pool's statement timeout.
	if _, err := conn.Exec(ctx, `SELECT set_config('statement_timeout', '0', false)`); err != nil {
		return nil, fmt.Errorf("database: lift the statement timeout for migrations: %w", err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLockID); err != nil {
		return nil, fmt.Errorf("database: lock migrations: %w", err)
	}
	defer func() {
		// Unlock on a fresh context: ctx may be cancelled by now.
		unlockCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(unlockCtx, `SELECT pg_advisory_unlock($1)`, migrateLockID)
		_, _ = conn.Exec(unlockCtx, `RESET statement_timeout`)
	}()
	var done []Applied
	for _, set := range Expand(sets) {
		applied, err := migrateSet(ctx, conn.Conn(), set)
		done = append(done, applied...)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// setComplete reports whether every migration of set is recorded in its
// schema's schema_migrations (false when that table does not exist yet).
func setComplete(ctx context.Context, conn *pgx.Conn, set MigrationSet, migrations []Migration) (bool, error) {
	var table *string
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1)::text`, set.Schema+".schema_migrations").Scan(&table); err != nil {
		return false, fmt.Errorf("database: %s.schema_migrations: %w", set.Schema, err)
	}
	if table == nil {
		return false, nil
	}
	var versions []int
	rows, err := conn.Query(ctx, `SELECT version FROM `+pgx.Identifier{set.Schema}.Sanitize()+`.schema_migrations WHERE component = $1`, set.Component)
	if err != nil {
		return false, fmt.Errorf("database: read %s.schema_migrations: %w", set.Schema, err)
	}
	if versions, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil {
		return false, fmt.Errorf("database: read %s.schema_migrations: %w", set.Schema, err)
	}
	for _, m := range migrations {
		if !slices.Contains(versions, m.Version) {
			return false, nil
		}
	}
	return true, nil
}

func migrateSet(ctx context.Context, conn *pgx.Conn, set MigrationSet) ([]Applied, error) {
	migrations, err := set.Migrations()
	if err != nil {
		return nil, err
	}
	schema := pgx.Identifier{set.Schema}.Sanitize()
	// A set that is complete needs no DDL at all: a service connecting as
	// its own role (pkg/dbroles) passes over the identity schema, which
	// it may read but not change, and its own existing schema, which it
	// owns but could not create (no CREATE on the database).
	if complete, err := setComplete(ctx, conn, set, migrations); err != nil || complete {
		return nil, err
	}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, set.Schema).Scan(&exists); err != nil {
		return nil, fmt.Errorf("database: schema %s: %w", set.Schema, err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+schema); err != nil {
			return nil, fmt.Errorf("database: create schema %s: %w", set.Schema, err)
		}
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+schema+`.schema_migrations (
		component text NOT NULL,
		version int NOT NULL,
		name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (component, version))`); err != nil {
		return nil, fmt.Errorf("database: create %s.schema_migrations: %w", set.Schema, err)
	}
	rows, err := conn.Query(ctx, `SELECT version FROM `+schema+`.schema_migrations WHERE component = $1`, set.Component)
	if err != nil {
		return nil, fmt.Errorf("database: read %s.schema_migrations: %w", set.Schema, err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("database: read %s.schema_migrations: %w", set.Schema, err)
	}
	applied := map[int]bool{}
	for _, v := range versions {
		applied[v] = true
	}
	var done []Applied
	for _, m := range migrations {
		if applied[m.Version] {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			// Unqualified names in the SQL are the set's schema's.
			if _, err := tx.Exec(ctx, `SELECT set_config('search_path', $1, true)`, set.Schema); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO `+schema+`.schema_migrations (component, version, name) VALUES ($1, $2, $3)`,
				set.Component, m.Version, m.Name)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("database: migration %s/%s/%s: %w", set.Schema, set.Component, m.Name, err)
		}
		done = append(done, Applied{Schema: set.Schema, Component: set.Component, Name: m.Name})
	}
	return done, nil
}
