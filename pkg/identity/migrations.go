package identity

import (
	"embed"

	"github.com/docrepo/docrepo/pkg/database"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Schema is the Postgres schema of the identity tables.
const Schema = "identity"

// Migrations is the identity tables' migration set. Every service applies
// it at start-up (it authenticates against these tables), as do docrepoctl
// and the dev stack.
var Migrations = database.Embedded(migrationFiles, Schema, "identity")
