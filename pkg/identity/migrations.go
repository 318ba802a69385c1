package identity

import (
	"embed"

	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/database"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Schema is the Postgres schema of the identity tables.
const Schema = "identity"

// Migrations is the identity tables' migration set, with the identity
// schema's audit log (the changes to keys and credentials are recorded
// there). Every service applies it at start-up (it authenticates against
// these tables), as do docrepoctl and the dev stack.
var Migrations = withAudit(database.Embedded(migrationFiles, Schema, "identity"))

func withAudit(s database.MigrationSet) database.MigrationSet {
	s.With = []database.MigrationSet{audit.Migrations(Schema)}
	return s
}
