package walls

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	listOnce sync.Once
	listed   []Package
	listErr  error
)

// repoRoot is the repository root (this package is pkg/walls).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func packages(t *testing.T) []Package {
	t.Helper()
	listOnce.Do(func() { listed, listErr = ListPackages(repoRoot(t)) })
	if listErr != nil {
		t.Fatal(listErr)
	}
	if len(listed) < 40 {
		t.Fatalf("go list found %d packages; the workspace has more", len(listed))
	}
	return listed
}

func TestNoDependencyCrossesAWall(t *testing.T) {
	for _, v := range CheckImports(packages(t)) {
		t.Error(v)
	}
}

func TestRestrictedPackagesHaveOnlyTheirUsers(t *testing.T) {
	for _, v := range CheckImporters(packages(t), Importers) {
		t.Error(v)
	}
}

func TestSQLNamesOnlyTheOwnersTables(t *testing.T) {
	tables, err := Tables(repoRoot(t), Owners)
	if err != nil {
		t.Fatal(err)
	}
	// The owners' tables were found: a broken pattern cannot pass.
	for table, owner := range map[string]string{"api_keys": "identity", "doc_types": "schema", "outbox": "outbox",
		"documents": "document", "folder_refs": "document", "folder_groups": "folder", "audit_log": "audit",
		"ocr_jobs": "ocrjobs"} {
		if tables[table] != owner {
			t.Fatalf("table %s: owner %q, want %q (found %v)", table, tables[table], owner, tables)
		}
	}
	checked := 0
	for _, p := range packages(t) {
		if Area(p.ImportPath) == "" {
			continue
		}
		violations, err := CheckSQL(p, tables, Owners)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range violations {
			t.Error(v)
		}
		checked++
	}
	if checked < 40 {
		t.Fatalf("checked the SQL of %d packages", checked)
	}
}

// Each rule reports a deliberate violation.
func TestRulesCatchViolations(t *testing.T) {
	const (
		docsvc   = Module + "/services/document/internal/documentsvc"
		foldsvc  = Module + "/services/folder/internal/foldersvc"
		gateway  = Module + "/gateway/httpapi"
		outboxP  = Module + "/pkg/outbox"
		catalogP = Module + "/pkg/catalog"
	)
	imports := []struct {
		name string
		pkg  Package
		want string
	}{
		{name: "pkg reaches a service", pkg: Package{ImportPath: outboxP, Deps: []string{docsvc}}, want: "pkg is shared code"},
		{name: "pkg reaches the gateway", pkg: Package{ImportPath: outboxP, Deps: []string{gateway}}, want: "pkg is shared code"},
		{name: "a service reaches another", pkg: Package{ImportPath: foldsvc, Deps: []string{docsvc}}, want: "over gRPC only"},
		{name: "a service's test reaches another", pkg: Package{ImportPath: foldsvc, XTestImports: []string{docsvc}}, want: "over gRPC only"},
		{name: "the gateway reaches a service", pkg: Package{ImportPath: gateway, TestImports: []string{docsvc}}, want: "gateway talks to the services"},
		{name: "within a service is fine", pkg: Package{ImportPath: Module + "/services/document", Deps: []string{docsvc, outboxP}}},
	}
	for _, tt := range imports {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(CheckImports([]Package{tt.pkg}), "\n")
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("CheckImports = %q, want %q", got, tt.want)
			}
		})
	}

	if got := CheckImporters([]Package{{ImportPath: docsvc, Deps: []string{catalogP}}}, Importers); len(got) != 1 {
		t.Fatalf("the document service using pkg/catalog: %v, want one violation", got)
	}
	if got := CheckImporters([]Package{{ImportPath: Module + "/services/schema/internal/schemasvc", Deps: []string{catalogP}}}, Importers); len(got) != 0 {
		t.Fatalf("the schema service using pkg/catalog: %v, want none", got)
	}

	dir := t.TempDir()
	src := "package foldersvc\n\nconst q = `SELECT count(*) FROM document_folders df JOIN document.documents d ON d.id = df.doc_id`\n" +
		"const own = `SELECT id FROM folders`\n"
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tables := map[string]string{"document_folders": "document", "documents": "document", "folders": "folder"}
	got, err := CheckSQL(Package{ImportPath: foldsvc, Dir: dir, GoFiles: []string{"x.go"}}, tables, Owners)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.Contains(got[0], "document_folders") || !strings.Contains(got[1], "documents, a table of document") {
		t.Fatalf("CheckSQL = %q, want the two document tables and not the folder service's own", got)
	}

	// The visibility predicate's groups table is read from the Groups
	// literal that names it.
	src = "package foldersvc\n\nimport \"github.com/docrepo/docrepo/pkg/visibility\"\n\n" +
		"var own = visibility.Groups{Table: \"folder_groups\", Key: \"folder_id\"}\n" +
		"var other = visibility.Groups{Table: \"document_groups\", Key: \"doc_id\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tables = map[string]string{"document_groups": "document", "folder_groups": "folder"}
	got, err = CheckSQL(Package{ImportPath: foldsvc, Dir: dir, GoFiles: []string{"x.go"}}, tables, Owners)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.Contains(got[0], "visibility.Groups names document_groups, a table of document") {
		t.Fatalf("CheckSQL of Groups literals = %q, want document_groups only", got)
	}
}

func TestSQLTablesAreLiterals(t *testing.T) {
	checked := 0
	for _, p := range packages(t) {
		if Area(p.ImportPath) == "" {
			continue
		}
		violations, err := CheckUnreadableSQL(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range violations {
			t.Error(v)
		}
		checked++
	}
	if checked < 40 {
		t.Fatalf("checked the SQL of %d packages", checked)
	}
}

// A table name concatenated or formatted into SQL is reported; predicates
// and values built at run time are not, and neither are the packages that
// name one table in every schema.
func TestUnreadableSQLIsReported(t *testing.T) {
	dir := t.TempDir()
	src := "package foldersvc\n\nimport \"fmt\"\n\nfunc q(t, where string) []string {\n\treturn []string{\n" +
		"\t\t`SELECT id FROM ` + t + ` WHERE x = 1`,\n" + // line 7: a concatenated table
		"\t\t`SELECT id FROM folders f WHERE ` + where,\n" + // a predicate: fine
		"\t\tfmt.Sprintf(`DELETE FROM %s WHERE id = $1`, t),\n" + // line 9: a formatted table
		"\t\t\"SELECT a, \" + where + \" FROM folders\",\n" + // a column list: fine
		"\t\t`INSERT INTO ` + `folders (id) VALUES (1)`,\n" + // literals only: fine
		"\t\tfmt.Sprintf(\"no row from %s\", t),\n" + // prose, not SQL: fine
		"\t}\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Package{ImportPath: Module + "/services/folder/internal/foldersvc", Dir: dir, GoFiles: []string{"x.go"}}
	got, err := CheckUnreadableSQL(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.Contains(got[0], "x.go:7") || !strings.Contains(got[0], "built at run time") ||
		!strings.Contains(got[1], "x.go:9") || !strings.Contains(got[1], "formatted in") {
		t.Fatalf("CheckUnreadableSQL = %q, want lines 7 and 9", got)
	}
	p.ImportPath = Module + "/pkg/audit"
	if got, _ := CheckUnreadableSQL(p); len(got) != 0 {
		t.Fatalf("pkg/audit, which names its one table in every schema: %q", got)
	}
}
