// Package walls checks the architecture rules of the repository that the Go
// compiler alone does not (docs/architecture.md):
//
//   - pkg/ is shared code: no package of it reaches gateway or a service;
//   - a service reaches no other service and not the gateway, and the
//     gateway reaches no service: they talk over gRPC only;
//   - each table has one owner (the migration set that creates it), and
//     only the owner's code names it in SQL; a data-access package of pkg
//     (identity, catalog) is imported only by the code allowed to use it.
//
// The rules run as tests over `go list` of every module of the workspace and
// over the string literals of every Go file (tests excluded). Each rule also
// has a test that feeds it a deliberate violation, so a rule that stopped
// seeing anything would fail too.
package walls

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Module is the module path prefix of the repository.
const Module = "github.com/docrepo/docrepo"

// Package is one package of the workspace as `go list` reports it.
type Package struct {
	ImportPath  string
	Dir         string
	GoFiles     []string
	Deps        []string
	TestImports []string
	// XTestImports are the imports of the package's external tests.
	XTestImports []string
}

// ListPackages lists every package of every module of the workspace at
// root, with its dependencies.
func ListPackages(root string) ([]Package, error) {
	mods, err := goCmd(root, "list", "-m", "-f", "{{.Dir}}")
	if err != nil {
		return nil, err
	}
	var patterns []string
	for _, dir := range strings.Fields(string(mods)) {
		patterns = append(patterns, dir+"/...")
	}
	out, err := goCmd(root, append([]string{"list", "-json"}, patterns...)...)
	if err != nil {
		return nil, err
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// Area is the architectural area of an import path: "pkg", "gateway",
// "service:<name>", or "" outside the repository.
func Area(importPath string) string {
	rest, ok := strings.CutPrefix(importPath, Module+"/")
	if !ok {
		return ""
	}
	first, after, _ := strings.Cut(rest, "/")
	switch first {
	case "pkg":
		return "pkg"
	case "gateway":
		return "gateway"
	case "services":
		name, _, _ := strings.Cut(after, "/")
		return "service:" + name
	}
	return ""
}

// CheckImports returns a line for every dependency that crosses a wall.
func CheckImports(pkgs []Package) []string {
	var out []string
	for _, p := range pkgs {
		from := Area(p.ImportPath)
		seen := map[string]bool{}
		for _, list := range [][]string{p.Deps, p.TestImports, p.XTestImports} {
			for _, dep := range list {
				if seen[dep] {
					continue
				}
				seen[dep] = true
				if why := crosses(from, Area(dep)); why != "" {
					out = append(out, fmt.Sprintf("%s depends on %s: %s", p.ImportPath, dep, why))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func crosses(from, to string) string {
	switch {
	case from == "" || to == "" || from == to:
		return ""
	case from == "pkg" && to != "pkg":
		return "pkg is shared code and reaches neither the gateway nor a service"
	case strings.HasPrefix(from, "service:") && to != "pkg":
		return "a service talks to the gateway and to other services over gRPC only"
	case from == "gateway" && strings.HasPrefix(to, "service:"):
		return "the gateway talks to the services over gRPC only"
	}
	return ""
}

// Owner is the owner of a set of tables: a migration directory, and the
// areas (or packages) whose code may name its tables in SQL.
type Owner struct {
	Name string
	// MigrationsDir is relative to the repository root.
	MigrationsDir string
	// Users are import paths whose SQL may name the owner's tables; one
	// ending in "/" stands for that package and every package below it.
	Users []string
}

// Owners are the repository's table owners. The outbox table exists once in
// the schema of every service that writes events; only pkg/outbox names it.
// The audit_log table exists once in the schema of every owner of data;
// only pkg/audit names it.
// The OCR job queue and text cache exist in the schema of the process that
// writes the search engine (search or indexer); only pkg/ocrjobs names them.
var Owners = []Owner{
	{Name: "identity", MigrationsDir: "pkg/identity/migrations", Users: []string{Module + "/pkg/identity"}},
	{Name: "schema", MigrationsDir: "pkg/catalog/migrations", Users: []string{Module + "/pkg/catalog"}},
	{Name: "outbox", MigrationsDir: "pkg/outbox/migrations", Users: []string{Module + "/pkg/outbox"}},
	{Name: "audit", MigrationsDir: "pkg/audit/migrations", Users: []string{Module + "/pkg/audit"}},
	{Name: "ocrjobs", MigrationsDir: "pkg/ocrjobs/migrations", Users: []string{Module + "/pkg/ocrjobs"}},
	{Name: "document", MigrationsDir: "services/document/internal/documentsvc/migrations", Users: []string{Module + "/services/document/"}},
	{Name: "folder", MigrationsDir: "services/folder/internal/foldersvc/migrations", Users: []string{Module + "/services/folder/"}},
}

// Importers restricts which production code may import a data-access
// package of pkg: the package that writes the schema service's tables is
// for the schema service, the administrator's CLI and the search benchmark
// (which sets up its corpus as an administrator would). pkg/identity is for
// every service: it authenticates their callers. Tests may import either to
// set up their data.
var Importers = map[string][]string{
	Module + "/pkg/catalog": {Module + "/services/schema/", Module + "/pkg/cmd/docrepoctl", Module + "/pkg/catalog",
		Module + "/services/search/bench"},
}

var createTable = regexp.MustCompile(`(?i)CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_][a-z0-9_]*)`)

// Tables reads, from each owner's migrations under root, the tables it
// creates: table name → owner name.
func Tables(root string, owners []Owner) (map[string]string, error) {
	tables := map[string]string{}
	for _, o := range owners {
		files, err := filepath.Glob(filepath.Join(root, o.MigrationsDir, "*.sql"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("owner %s: no migrations in %s", o.Name, o.MigrationsDir)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			for _, m := range createTable.FindAllStringSubmatch(stripSQLComments(string(b)), -1) {
				if prev, ok := tables[m[1]]; ok && prev != o.Name {
					return nil, fmt.Errorf("table %s is created by both %s and %s", m[1], prev, o.Name)
				}
				tables[m[1]] = o.Name
			}
		}
	}
	return tables, nil
}

func stripSQLComments(s string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "--")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// tableRef finds table names in SQL: after FROM, JOIN, INTO, UPDATE,
// TABLE, optionally schema-qualified.
var tableRef = regexp.MustCompile(`(?i)\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(?:ONLY\s+)?(?:"?[a-z_]+"?\.)?([a-z_][a-z0-9_]*)\b`)

// CheckSQL returns a line for every table of another owner that the SQL in
// the string literals of pkg's Go files (tests excluded) names.
func CheckSQL(p Package, tables map[string]string, owners []Owner) ([]string, error) {
	var out []string
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if table, pos, ok := groupsTable(n); ok {
				if owner, ok := tables[table]; ok && !mayUse(p.ImportPath, owner, owners) {
					out = append(out, fmt.Sprintf("%s (%s): visibility.Groups names %s, a table of %s", p.ImportPath,
						fset.Position(pos), table, owner))
				}
				return true
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, m := range tableRef.FindAllStringSubmatch(s, -1) {
				owner, ok := tables[strings.ToLower(m[1])]
				if !ok || mayUse(p.ImportPath, owner, owners) {
					continue
				}
				out = append(out, fmt.Sprintf("%s (%s): SQL names %s, a table of %s", p.ImportPath,
					fset.Position(lit.Pos()), m[1], owner))
			}
			return true
		})
	}
	return out, nil
}

// groupsTable is the table of a visibility.Groups{Table: "…"} literal: the
// visibility predicate's SQL names it (pkg/visibility).
func groupsTable(n ast.Node) (string, token.Pos, bool) {
	cl, ok := n.(*ast.CompositeLit)
	if !ok {
		return "", 0, false
	}
	sel, ok := cl.Type.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Groups" {
		return "", 0, false
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "visibility" {
		return "", 0, false
	}
	for _, e := range cl.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Table" {
			if s, ok := stringLit(kv.Value); ok {
				return strings.ToLower(s), kv.Value.Pos(), true
			}
		}
	}
	return "", 0, false
}

func mayUse(importPath, owner string, owners []Owner) bool {
	for _, o := range owners {
		if o.Name != owner {
			continue
		}
		for _, u := range o.Users {
			if within(importPath, u) {
				return true
			}
		}
	}
	return false
}

// CheckImporters returns a line for every dependency of production code on
// a restricted package it is not allowed to use.
func CheckImporters(pkgs []Package, importers map[string][]string) []string {
	var out []string
	for _, p := range pkgs {
		for _, dep := range p.Deps {
			allowed, restricted := importers[dep]
			if !restricted || allowedFor(p.ImportPath, allowed) {
				continue
			}
			out = append(out, fmt.Sprintf("%s depends on %s, which only %v may use", p.ImportPath, dep, allowed))
		}
	}
	sort.Strings(out)
	return out
}

func allowedFor(importPath string, allowed []string) bool {
	for _, a := range allowed {
		if within(importPath, a) {
			return true
		}
	}
	return false
}

// within reports whether importPath is pattern, or, for a pattern ending in
// "/", the package before the slash or one below it.
func within(importPath, pattern string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/"); ok {
		return importPath == dir || strings.HasPrefix(importPath, pattern)
	}
	return importPath == pattern
}

// tableSlotEnd is a piece of SQL that ends where a table name goes: what
// follows it in a concatenation is the table.
// SQL keywords are upper case in docrepo's code; lower-case "from" is
// prose (an error message).
var tableSlotEnd = regexp.MustCompile(`\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(?:ONLY\s+)?(?:(?:IF\s+(?:NOT\s+)?EXISTS)\s+)?$`)

// tableSlotVerb is a format string with a verb where a table name goes.
var tableSlotVerb = regexp.MustCompile(`\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(?:ONLY\s+)?(?:(?:IF\s+(?:NOT\s+)?EXISTS)\s+)?(?:"?[a-z_]+"?\.)?%[-+# 0-9.]*[sqv]`)

// ComputedTables lists the packages allowed to build table names at run
// time: the code of tables that exist once per owner's schema (the audit
// log, the outbox) or of every schema (migrations' bookkeeping), which
// qualifies its one table with the schema it is given; and the visibility
// predicate, over the groups table its caller names in a visibility.Groups
// literal, which CheckSQL reads as SQL of the caller.
var ComputedTables = []string{Module + "/pkg/audit", Module + "/pkg/outbox", Module + "/pkg/database", Module + "/pkg/visibility"}

// CheckUnreadableSQL returns a line for every SQL statement in pkg's Go
// files (tests excluded) whose table CheckSQL cannot read: one concatenated
// after FROM, JOIN, INTO, UPDATE or TABLE ("... FROM " + t), or formatted
// there ("... FROM %s"). A table the walls cannot see is a table any code
// could reach; packages of ComputedTables are exempt.
func CheckUnreadableSQL(p Package) ([]string, error) {
	if allowedFor(p.ImportPath, ComputedTables) {
		return nil, nil
	}
	var out []string
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op != token.ADD {
					return true
				}
				// a + b + c is (a + b) + c: the text before Y is X's
				// last literal.
				left := n.X
				if b, ok := left.(*ast.BinaryExpr); ok && b.Op == token.ADD {
					left = b.Y
				}
				s, ok := stringLit(left)
				if !ok || !tableSlotEnd.MatchString(s) {
					return true
				}
				if _, lit := stringLit(n.Y); lit {
					return true
				}
				out = append(out, fmt.Sprintf("%s (%s): SQL with a table name built at run time (%q + …): write the table in the literal, so the walls can read it",
					p.ImportPath, fset.Position(n.Pos()), tail(s)))
			case *ast.BasicLit:
				if s, ok := stringLit(n); ok && tableSlotVerb.MatchString(s) {
					out = append(out, fmt.Sprintf("%s (%s): SQL with a table name formatted in (%q): write the table in the literal, so the walls can read it",
						p.ImportPath, fset.Position(n.Pos()), tableSlotVerb.FindString(s)))
				}
			}
			return true
		})
	}
	return out, nil
}

// stringLit is the value of a string literal expression.
func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// tail is the end of s, for a message.
func tail(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 40 {
		return "…" + s[len(s)-40:]
	}
	return s
}
