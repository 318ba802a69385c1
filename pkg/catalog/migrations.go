package catalog

import (
	"embed"

	"github.com/docrepo/docrepo/pkg/database"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Schema is the Postgres schema of the schema service's tables (doc types
// and custom-field templates).
const Schema = "schema"

// Migrations is the schema service's migration set; the schema service
// applies it at start-up, and docrepoctl before it writes doc types or
// templates.
var Migrations = database.Embedded(migrationFiles, Schema, "schema")
