// Package pgtest gives each test a fresh Postgres database on a real server,
// with the migration sets the test names applied (each service owns its
// migrations: a test asks for those of the code it exercises).
//
// The server is DOCREPO_TEST_DATABASE_URL, else DATABASE_URL, else
// postgres://postgres@127.0.0.1:5432/postgres. A template database holding
// the sets is built once per combination (its name carries a hash of the
// sets' migrations), and each test gets CREATE DATABASE ... TEMPLATE of it,
// which takes a few milliseconds; the database is dropped when the test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/testenv"
)

// ServerURL is the maintenance connection URL of the test server.
func ServerURL() string {
	for _, k := range []string{"DOCREPO_TEST_DATABASE_URL", "DATABASE_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

func withDatabase(raw, db string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	u.Path = "/" + db
	return u.String(), nil
}

func templateName(sets []database.MigrationSet) (string, error) {
	h := sha256.New()
	for _, set := range database.Expand(sets) {
		ms, err := set.Migrations()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%s\x00", set.Schema, set.Component)
		for _, m := range ms {
			fmt.Fprintf(h, "%d\x00%s\x00%s\x00", m.Version, m.Name, m.SQL)
		}
	}
	return "docrepo_tmpl_" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// ensureTemplate creates the template database once, under an advisory lock
// so concurrent test binaries do not race.
func ensureTemplate(ctx context.Context, admin *pgx.Conn, name string, sets []database.MigrationSet) error {
	if _, err := admin.Exec(ctx, `SELECT pg_advisory_lock(7366102)`); err != nil {
		return err
	}
	defer admin.Exec(context.Background(), `SELECT pg_advisory_unlock(7366102)`) //nolint:errcheck
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	building := name + "_build"
	if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{building}.Sanitize()+` WITH (FORCE)`); err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{building}.Sanitize()); err != nil {
		return err
	}
	dbURL, err := withDatabase(ServerURL(), building)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	_, err = database.Migrate(ctx, pool, sets...)
	pool.Close()
	if err != nil {
		return err
	}
	_, err = admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{building}.Sanitize()+` RENAME TO `+pgx.Identifier{name}.Sanitize())
	return err
}

// ErrUnavailable reports that no Postgres server could be reached.
type ErrUnavailable struct{ Err error }

func (e ErrUnavailable) Error() string {
	return fmt.Sprintf("no Postgres at %s (%v); `make test` starts one", ServerURL(), e.Err)
}

// CreateDatabase creates a fresh database with sets applied and returns its
// URL and a function dropping it. It is for TestMain; tests use NewDatabase.
func CreateDatabase(ctx context.Context, sets ...database.MigrationSet) (dbURL string, drop func(), err error) {
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		return "", nil, ErrUnavailable{err}
	}
	defer admin.Close(context.Background())
	tmpl, err := templateName(sets)
	if err != nil {
		return "", nil, err
	}
	if err := ensureTemplate(ctx, admin, tmpl, sets); err != nil {
		return "", nil, fmt.Errorf("pgtest: build template database: %w", err)
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	name := "docrepo_test_" + hex.EncodeToString(suffix[:])
	// CREATE DATABASE from a template fails while another session is
	// connected to the template; retry briefly.
	for attempt := 0; ; attempt++ {
		_, err = admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()+` TEMPLATE `+pgx.Identifier{tmpl}.Sanitize())
		if err == nil || attempt == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return "", nil, fmt.Errorf("pgtest: create database: %w", err)
	}
	drop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, ServerURL())
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
	}
	dbURL, err = withDatabase(ServerURL(), name)
	if err != nil {
		drop()
		return "", nil, err
	}
	return dbURL, drop, nil
}

// NewDatabase creates a fresh database with sets applied for t and returns
// its URL; the database is dropped when t ends.
func NewDatabase(t testing.TB, sets ...database.MigrationSet) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dbURL, drop, err := CreateDatabase(ctx, sets...)
	var unavailable ErrUnavailable
	if errors.As(err, &unavailable) {
		testenv.Unavailable(t, "%v", err)
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return dbURL
}

// NewPool returns a pool on a fresh database with sets applied, closed when
// t ends. Its search_path is schema, as a service's pool's is (empty: the
// server's default).
func NewPool(t testing.TB, schema string, sets ...database.MigrationSet) *pgxpool.Pool {
	t.Helper()
	dbURL := NewDatabase(t, sets...)
	pool, err := database.Open(context.Background(), dbURL, schema)
	if err != nil {
		t.Fatalf("pgtest: open: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}
