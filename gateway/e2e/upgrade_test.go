package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/blob/diskstore"
	"github.com/docrepo/docrepo/pkg/launcher"
	"github.com/docrepo/docrepo/pkg/testenv/legacydb"
	"github.com/docrepo/docrepo/pkg/testenv/natstest"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// TestUpgradeFromSharedTables starts today's services on a database made
// and filled the way docrepo did before each service owned its data (every
// table in schema public, one migration set): each service adopts its own
// tables into its schema on start-up, and everything a user had is still
// there and still works: keys, folders, documents with their lock holder,
// files, custom fields, doc types, doc-number sequences, an event that was
// never published, and id sequences that continue where they were.
func TestUpgradeFromSharedTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	if err := legacydb.Create(ctx, dbURL); err != nil {
		t.Fatal(err)
	}
	old := seedLegacy(t, dbURL)

	// The upgraded stack: its own NATS (the document service's consumers
	// are durable, by name), its own blob directory, the old database.
	nsrv := natstest.Start(t)
	upgraded := &launcher.Stack{DatabaseURL: dbURL, NATSURL: nsrv.URL(), DataDir: filepath.Dir(old.blobDir),
		Only: []string{"folder", "schema", "document", "gateway"}, Env: []string{"DOCREPO_LOG_LEVEL=warn"}}
	startTestStack(t, upgraded)
	base := upgraded.URL()
	get := func(path string) *response {
		t.Helper()
		return doRequestTo(t, base, old.token, "GET", path, nil)
	}

	// Folders and the key that reads them.
	r := get("/apiv2/pub/folders")
	expect(t, r, 200)
	if !strings.Contains(string(r.Body), `"full_path":"Old"`) || !strings.Contains(string(r.Body), `"full_path":"Old->Sub"`) {
		t.Fatalf("folders after the upgrade: %s", r.Body)
	}
	// The document, with its lock holder's name, file, folder and custom
	// fields.
	r = get(fmt.Sprintf("/apiv2/pub/documents/%d?include=versions,folders,customfields", old.docID))
	expect(t, r, 200)
	for _, want := range []string{`"description":"old memo"`, `"doc_number":"INV-00007"`, `"islocked":true`,
		`"locked_by":"legacy-user"`, `"filehash":"` + old.sha + `"`, `"full_path":"Old"`, `"template_name":"Lines","rows":[{"amount":12.5}]`} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("document lacks %s: %s", want, r.Body)
		}
	}
	r = get(fmt.Sprintf("/apiv2/pub/documents/%d/download", old.docID))
	expect(t, r, 200)
	if !bytes.Equal(r.Body, old.content) {
		t.Errorf("download after the upgrade: %q", r.Body)
	}
	r = get("/apiv2/pub/schema/values/Documents.doc_type")
	expect(t, r, 200)
	if !strings.Contains(string(r.Body), "Invoice") {
		t.Errorf("doc types after the upgrade: %s", r.Body)
	}

	// Writes continue the old sequences.
	up := multipartParts(t, field("folder_id", strconv.FormatInt(old.folderID, 10)), field("doc_number_prefix", "INV"),
		field("doc_type", "Invoice"), filePart("new.txt", []byte("a new memo")))
	r = doRequestTo(t, base, old.token, "POST", "/apiv2/pub/documents/upload", up)
	expect(t, r, 200)
	var res uploadResult
	r.JSON(t, &res)
	if res.DocNumber == nil || *res.DocNumber != "INV-00008" || res.DocID <= old.docID {
		t.Fatalf("upload after the upgrade = %s, want doc_number INV-00008 and an id above %d", r.Body, old.docID)
	}
	r = doRequestTo(t, base, old.token, "POST", "/apiv2/pub/folders", map[string]any{"name": "New"})
	expect(t, r, 200)
	var f folder
	r.JSON(t, &f)
	if f.FolderID <= old.subFolderID {
		t.Fatalf("new folder id %d, want above the old %d", f.FolderID, old.subFolderID)
	}

	// The event the old relay never published goes out, and deleting the
	// old folder unassigns the old document through the new event flow.
	eventually(t, 15*time.Second, func() error {
		var pending int
		if err := pgxQuery(t, dbURL, `SELECT count(*) FROM document.outbox WHERE published_at IS NULL`, &pending); err != nil {
			return err
		}
		if pending != 0 {
			return fmt.Errorf("%d outbox rows unpublished", pending)
		}
		return nil
	})
	r = doRequestTo(t, base, old.token, "DELETE", fmt.Sprintf("/apiv2/pub/folders/%d", old.folderID), nil)
	expect(t, r, 200)
	if !strings.Contains(string(r.Body), `"unassigned_documents":2`) {
		t.Fatalf("delete of the old folder: %s", r.Body)
	}
	eventually(t, 15*time.Second, func() error {
		var left int
		if err := pgxQuery(t, dbURL, `SELECT count(*) FROM document.document_folders`, &left); err != nil {
			return err
		}
		if left != 0 {
			return fmt.Errorf("%d assignments left", left)
		}
		return nil
	})

	// Nothing of docrepo's is left in public but the old migration record.
	var leftovers string
	if err := pgxQuery(t, dbURL, `SELECT coalesce(string_agg(tablename, ',' ORDER BY tablename), '')
		FROM pg_tables WHERE schemaname = 'public'`, &leftovers); err != nil {
		t.Fatal(err)
	}
	if leftovers != "schema_migrations" {
		t.Errorf("tables left in public: %s", leftovers)
	}
}

// legacyInstallation is what seedLegacy stored.
type legacyInstallation struct {
	token                 string
	docID                 int64
	folderID, subFolderID int64
	blobDir               string
	content               []byte
	sha                   string
}

// seedLegacy writes, with the old schema's SQL, a user with a key, a
// folder tree, a doc type, a template, and a locked document with a file,
// custom values and an unpublished event.
func seedLegacy(t *testing.T, dbURL string) legacyInstallation {
	t.Helper()
	ctx := context.Background()
	token, hash := auth.NewToken()
	old := legacyInstallation{token: token, blobDir: filepath.Join(t.TempDir(), "blobs"), content: []byte("the old memo")}
	sum := sha256.Sum256(old.content)
	old.sha = hex.EncodeToString(sum[:])
	store, err := diskstore.New(old.blobDir)
	if err != nil {
		t.Fatal(err)
	}
	const key = "files/aa/legacy-memo.txt"
	if _, err := store.Put(ctx, key, bytes.NewReader(old.content)); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var uid, gid, tid, cid int64
	steps := []struct {
		sql  string
		args []any
		into []any
	}{
		{sql: `INSERT INTO groups (name) VALUES ('legacy-g') RETURNING id`, into: []any{&gid}},
		{sql: `INSERT INTO users (username) VALUES ('legacy-user') RETURNING id`, into: []any{&uid}},
		{sql: `INSERT INTO user_groups (user_id, group_id) VALUES ($1, $2)`, args: []any{&uid, &gid}},
		{sql: `INSERT INTO api_keys (user_id, token_hash, token_prefix, scopes) VALUES ($1, $2, $3, '{documents_read,documents_write,search}')`,
			args: []any{&uid, hash, auth.TokenPrefix(token)}},
		{sql: `INSERT INTO folders (code, name, full_path, created_by) VALUES (gen_random_uuid(), 'Old', 'Old', $1) RETURNING id`,
			args: []any{&uid}, into: []any{&old.folderID}},
		{sql: `INSERT INTO folders (code, name, parent_id, full_path, created_by) VALUES (gen_random_uuid(), 'Sub', $1, 'Old->Sub', $2) RETURNING id`,
			args: []any{&old.folderID, &uid}, into: []any{&old.subFolderID}},
		{sql: `INSERT INTO folder_groups (folder_id, group_id) VALUES ($1, $3), ($2, $3)`, args: []any{&old.folderID, &old.subFolderID, &gid}},
		{sql: `INSERT INTO doc_types (name) VALUES ('Invoice')`},
		{sql: `INSERT INTO cf_templates (name, kind) VALUES ('Lines', 'grid') RETURNING id`, into: []any{&tid}},
		{sql: `INSERT INTO cf_columns (template_id, name, label, type) VALUES ($1, 'amount', 'Amount', 'number') RETURNING id`,
			args: []any{&tid}, into: []any{&cid}},
		{sql: `INSERT INTO documents (description, doc_number, doc_type, entry_person_id, entry_person, locked_by, locked_at, rev)
			VALUES ('old memo', 'INV-00007', 'Invoice', $1, 'legacy-user', $1, now(), 3) RETURNING id`, args: []any{&uid}, into: []any{&old.docID}},
		{sql: `INSERT INTO doc_number_sequences (prefix, last_value) VALUES ('INV', 7)`},
		{sql: `INSERT INTO document_groups (doc_id, group_id) VALUES ($1, $2)`, args: []any{&old.docID, &gid}},
		{sql: `INSERT INTO document_folders (doc_id, folder_id) VALUES ($1, $2)`, args: []any{&old.docID, &old.folderID}},
		{sql: `INSERT INTO linked_files (doc_id, image_name, image_type, image_size, origname, filehash, blob_key, lastmodifieduser)
			VALUES ($1, 'legacy-memo.txt', 'text/plain', $2, 'memo.txt', $3, $4, $5)`,
			args: []any{&old.docID, len(old.content), old.sha, key, &uid}},
		{sql: `INSERT INTO document_custom_values (doc_id, template_id, row_no, vals) VALUES ($1, $2, 1, jsonb_build_object($3::bigint::text, 12.5))`,
			args: []any{&old.docID, &tid, &cid}},
		{sql: `INSERT INTO outbox (aggregate, aggregate_id, kind, rev) VALUES ('document', $1, 'updated', 3)`, args: []any{&old.docID}},
	}
	for _, s := range steps {
		args := make([]any, len(s.args))
		for i, a := range s.args {
			if p, ok := a.(*int64); ok {
				args[i] = *p
			} else {
				args[i] = a
			}
		}
		var err error
		if s.into != nil {
			err = conn.QueryRow(ctx, s.sql, args...).Scan(s.into...)
		} else {
			_, err = conn.Exec(ctx, s.sql, args...)
		}
		if err != nil {
			t.Fatalf("seed %q: %v", s.sql, err)
		}
	}
	return old
}

// pgxQuery scans one row of sql on a fresh connection to dbURL.
func pgxQuery(t *testing.T, dbURL, sql string, into ...any) error {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(context.Background(), sql).Scan(into...)
}
