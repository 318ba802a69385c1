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
		"documents": "document", "folder_refs": "document", "folder_groups": "folder"} {
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
}
