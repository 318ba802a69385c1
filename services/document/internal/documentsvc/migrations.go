package documentsvc

import (
	"embed"

	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/outbox"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Schema is the Postgres schema that holds the document service's tables.
const Schema = "document"

// Migrations are the sets the document service applies at start-up, in order:
// identity (it authenticates callers against it), its own tables, its
// outbox and its audit log.
func Migrations() []database.MigrationSet {
	return []database.MigrationSet{
		identity.Migrations,
		database.Embedded(migrationFiles, Schema, Schema),
		outbox.Migrations(Schema),
		audit.Migrations(Schema),
	}
}
