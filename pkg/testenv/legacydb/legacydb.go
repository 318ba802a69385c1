// Package legacydb builds databases the way docrepo built them before each
// service owned its data: every table in schema public, made by one ordered
// migration set recorded in public.schema_migrations (version, name). The
// SQL files are those of that release, unchanged, so that the forward
// migration of existing installations is tested on the real thing.
package legacydb

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var files embed.FS

// Create applies the old migration set to the (empty) database at dbURL,
// recording it as the old code did.
func Create(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	entries, err := fs.ReadDir(files, "migrations")
	if err != nil {
		return err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (
		version int PRIMARY KEY,
		name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	for _, name := range names {
		num, _, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return fmt.Errorf("legacydb: %s: %w", name, err)
		}
		body, err := fs.ReadFile(files, "migrations/"+name)
		if err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, string(body)); err != nil {
			return fmt.Errorf("legacydb: %s: %w", name, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, v, name); err != nil {
			return err
		}
	}
	return nil
}
