package walls

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitecturePageListsEveryTable keeps the table-ownership table of
// docs/architecture.md equal to the tables the owners' migrations create:
// a new table fails here until the page says where it lives.
func TestArchitecturePageListsEveryTable(t *testing.T) {
	root := repoRoot(t)
	tables, err := Tables(root, Owners)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented, err := DocumentedTables(string(page))
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range CompareTables(tables, documented, Owners) {
		t.Error(problem)
	}
}

// tableName is a backticked table name in the page's Tables column.
var tableName = regexp.MustCompile("`([a-z_][a-z0-9_]*)`")

// DocumentedTables reads the "Who owns which table" section of
// docs/architecture.md: the backticked names of each row's Tables column,
// by the row's schema.
func DocumentedTables(page string) (map[string][]string, error) {
	_, section, ok := strings.Cut(page, "\n## Who owns which table\n")
	if !ok {
		return nil, fmt.Errorf(`docs/architecture.md has no "## Who owns which table" section`)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	col := -1
	out := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(line, "|")
		if col < 0 {
			col = slices.IndexFunc(cells, func(c string) bool { return strings.TrimSpace(c) == "Tables" })
			continue
		}
		if col >= len(cells) || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		schema := strings.Trim(strings.TrimSpace(cells[1]), "`")
		for _, m := range tableName.FindAllStringSubmatch(cells[col], -1) {
			out[schema] = append(out[schema], m[1])
		}
	}
	if col < 0 || len(out) == 0 {
		return nil, fmt.Errorf("docs/architecture.md's ownership table has no Tables column or no rows")
	}
	return out, nil
}

// CompareTables names every table the migrations create that the page does
// not list, and every table the page lists that no migration creates.
func CompareTables(tables map[string]string, documented map[string][]string, owners []Owner) []string {
	listed := map[string]bool{}
	for _, names := range documented {
		for _, n := range names {
			listed[n] = true
		}
	}
	dirs := map[string]string{}
	for _, o := range owners {
		dirs[o.Name] = o.MigrationsDir
	}
	var out []string
	for _, name := range sortedKeys(tables) {
		if !listed[name] {
			out = append(out, fmt.Sprintf("docs/architecture.md, \"Who owns which table\": add `%s` (created by %s, owner %s) to the Tables column of the row of each schema it is made in, and its migrations to that row's Migrations column",
				name, dirs[tables[name]], tables[name]))
		}
	}
	for _, name := range sortedKeys(listed) {
		if _, ok := tables[name]; !ok {
			out = append(out, fmt.Sprintf("docs/architecture.md, \"Who owns which table\": `%s` is listed, but no owner's migrations create it (pkg/walls.Owners): remove it or register its owner", name))
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestCompareTablesNamesWhatToAdd: the check fails in both directions and
// says exactly what to do.
func TestCompareTablesNamesWhatToAdd(t *testing.T) {
	owners := []Owner{{Name: "trash", MigrationsDir: "pkg/trash/migrations"}}
	got := CompareTables(map[string]string{"trash_items": "trash", "kept": "trash"},
		map[string][]string{"document": {"kept", "gone"}}, owners)
	want := []string{"add `trash_items` (created by pkg/trash/migrations, owner trash)", "`gone` is listed, but no owner's migrations create it"}
	if len(got) != len(want) {
		t.Fatalf("got %d problems %q, want %d", len(got), got, len(want))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("problem %d = %q, want it to say %q", i, got[i], want[i])
		}
	}
}

func TestDocumentedTablesReadsTheTablesColumn(t *testing.T) {
	page := "# x\n\n## Who owns which table\n\n| Schema | Owner | Tables | Migrations |\n|---|---|---|---|\n" +
		"| `identity` | x | `users`, `groups` | `pkg/identity/migrations` |\n| `folder` | y | `folders` | `not_a_table` |\n\n## Later\n\n| `z` | | `later` | |\n"
	got, err := DocumentedTables(page)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "map[folder:[folders] identity:[users groups]]" {
		t.Fatalf("got %v", got)
	}
}
