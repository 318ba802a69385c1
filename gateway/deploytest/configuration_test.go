package deploytest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/config/configref"
)

// TestConfigurationPageIsCurrent keeps docs/configuration.md what the
// commands register: a setting added, removed or reworded without
// regenerating the page fails here.
func TestConfigurationPageIsCurrent(t *testing.T) {
	want, err := configref.Render(collect(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, configref.Path))
	if err != nil {
		t.Fatalf("%v: run `%s` and commit %s", err, configref.FixCommand, configref.Path)
	}
	if string(got) != want {
		t.Fatalf("%s is stale (%s): run `%s` and commit it", configref.Path, firstDifference(string(got), want), configref.FixCommand)
	}
}

// firstDifference names the first line where the page differs from what
// it should be.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d is %q, should be %q", i+1, gl, wl)
		}
	}
	return "same lines"
}

// TestEveryVariableReadIsDocumented: a variable a command reads directly
// from its environment, bypassing the registry, would be missing from the
// reference.
func TestEveryVariableReadIsDocumented(t *testing.T) {
	page, err := os.ReadFile(filepath.Join(root, configref.Path))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range commands(t) {
		for _, v := range sortedKeys(c.vars) {
			if !strings.Contains(string(page), "`"+v+"`") {
				t.Errorf("%s reads %s, which %s does not document: register it on the command's config.Loader (pkg/config) and run `%s`", name, v, configref.Path, configref.FixCommand)
			}
		}
	}
}

// TestEverySettingIsRegisteredOnce: a variable is registered by one line of
// code; commands that share it call the function holding that line (like
// config.RegisterCommon), so its default and meaning cannot drift apart.
func TestEverySettingIsRegisteredOnce(t *testing.T) {
	regs, err := registrations(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(regs) < 50 {
		t.Fatalf("found only %d registered variables; has the registration API changed?", len(regs))
	}
	for _, env := range sortedKeys(regs) {
		if at := regs[env]; len(at) > 1 {
			t.Errorf("%s is registered in %d places (%s): register it in one function and call that (see pkg/config's RegisterCommon, ServiceAddr)", env, len(at), strings.Join(at, ", "))
		}
	}
}

// registrations finds every config.Loader registration in the repository's
// Go code (tests and generated code excluded) whose variable is a string
// literal or a constant of its package, by variable.
func registrations(root string) (map[string][]string, error) {
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		switch d.Name() {
		case ".git", "gen", "testdata", "node_modules", ".data":
			return filepath.SkipDir
		}
		fset := token.NewFileSet()
		files, err := goFiles(fset, path)
		if err != nil {
			return err
		}
		str := stringConsts(files)
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 5 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !loaderMethods[sel.Sel.Name] {
					return true
				}
				if env := str(call.Args[2]); envName.MatchString(env) {
					rel, _ := filepath.Rel(root, fset.Position(call.Pos()).Filename)
					out[env] = append(out[env], fmt.Sprintf("%s:%d", rel, fset.Position(call.Pos()).Line))
				}
				return true
			})
		}
		return nil
	})
	return out, err
}

// goFiles parses the non-test Go files of dir.
func goFiles(fset *token.FileSet, dir string) ([]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// stringConsts returns a function that evaluates a string literal or a
// string constant declared in files.
func stringConsts(files []*ast.File) func(ast.Expr) string {
	consts := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[n.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	return func(e ast.Expr) string {
		switch x := e.(type) {
		case *ast.BasicLit:
			if x.Kind == token.STRING {
				s, _ := strconv.Unquote(x.Value)
				return s
			}
		case *ast.Ident:
			return consts[x.Name]
		}
		return ""
	}
}

// settingName matches the names of docrepo's settings as Markdown quotes
// them; bareSettingName as package docs write them.
var (
	settingName     = regexp.MustCompile("`((?:DOCREPO|NATS|MINIO|OPENSEARCH)_[A-Z0-9_]*[A-Z0-9]|DATABASE_URL)[`=]")
	bareSettingName = regexp.MustCompile(`\b((?:DOCREPO|NATS|MINIO|OPENSEARCH)_[A-Z0-9_]*[A-Z0-9]|DATABASE_URL)\b[^*]`)
)

// TestDocsNameOnlyRealSettings: prose that names a variable (the README,
// docs/, the deployment READMEs, package docs) names one that exists: a
// registered setting, or one the repository's code, scripts or deployment
// files use (test switches, compose's .env). The reference itself is
// docs/configuration.md; the README links to it.
func TestDocsNameOnlyRealSettings(t *testing.T) {
	known := map[string]bool{}
	for _, c := range collect(t) {
		for _, v := range c.Vars {
			known[v.Env] = true
		}
	}
	var code strings.Builder // every non-prose file, to find test and deployment variables
	var prose []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "gen", "node_modules", ".data", "bin", "results", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case strings.HasSuffix(path, ".md"), strings.HasSuffix(path, "doc.go"):
			prose = append(prose, rel)
		default:
			if info, err := d.Info(); err == nil && info.Size() < 1<<20 {
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				code.Write(b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(prose, "README.md") || !slices.Contains(prose, configref.Path) {
		t.Fatalf("found no README.md or %s among %v", configref.Path, prose)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "("+configref.Path+")") {
		t.Errorf("README.md does not link to %s, the configuration reference", configref.Path)
	}
	checked := 0
	for _, rel := range prose {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		re := settingName
		if strings.HasSuffix(rel, ".go") {
			re = bareSettingName
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			checked++
			name := m[1]
			if !known[name] && !strings.Contains(code.String(), name) {
				t.Errorf("%s names %s, which no command registers and no code or deployment file uses: correct it, or link to %s", rel, name, configref.Path)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d variable names in the docs; has the quoting changed?", checked)
	}
}
