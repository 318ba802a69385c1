package documentsvc

import (
	"embed"
	"io/fs"

	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/outbox"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Schema is the Postgres schema that holds the document service's tables.
const Schema = "document"

// Migrations are the sets the document service applies at start-up, in order:
// identity (it authenticates callers against it), its own tables, and its
// outbox.
func Migrations() []database.MigrationSet {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err)
	}
	return []database.MigrationSet{
		identity.Migrations,
		{Schema: Schema, Component: Schema, FS: sub},
		outbox.Migrations(Schema),
	}
}
