package outbox

import (
	"embed"

	"github.com/docrepo/docrepo/pkg/database"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the migration set of the outbox table in schema, the
// schema of the service that writes the events. Apply it after the
// service's own set.
func Migrations(schema string) database.MigrationSet {
	return database.Embedded(migrationFiles, schema, "outbox")
}
