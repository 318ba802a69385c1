package deploytest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeConfigVars returns the variables named in the first column of the
// README's "Configuration reference" table.
func readmeConfigVars(t *testing.T, readme string) map[string]bool {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Configuration reference\n")
	if !ok {
		t.Fatal("README.md has no \"## Configuration reference\" section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	name := regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
	vars := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			vars[m[1]] = true
		}
	}
	if len(vars) == 0 {
		t.Fatal("the configuration reference table names no variables")
	}
	return vars
}

// TestReadmeConfigurationReference keeps the README's table complete and
// current: every variable any command reads is in it, and everything in it
// is read by some command.
func TestReadmeConfigurationReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := readmeConfigVars(t, string(b))
	read := map[string][]string{}
	for name, c := range commands(t) {
		for v := range c.vars {
			read[v] = append(read[v], name)
		}
	}
	tracing, err := envReads(filepath.Join(root, "pkg", "tracing"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range tracing {
		read[v] = append(read[v], "pkg/tracing")
	}
	for _, v := range sortedKeys(read) {
		if !documented[v] {
			t.Errorf("README.md's configuration reference lacks %s (read by %s)", v, strings.Join(read[v], ", "))
		}
	}
	for _, v := range sortedKeys(documented) {
		if _, ok := read[v]; !ok && !strings.HasPrefix(v, "OTEL_") {
			t.Errorf("README.md's configuration reference documents %s, which no command reads", v)
		}
	}
}

// TestReadmeConfigVarsParsing makes sure the table reader finds names
// wherever the table puts them, and ignores other columns.
func TestReadmeConfigVarsParsing(t *testing.T) {
	readme := "# x\n\n## Configuration reference\n\n| Variable | Used by | Default | Meaning |\n|---|---|---|---|\n" +
		"| `A_ONE` | all | `B_NOT` | x |\n| `C_TWO`, `D_THREE` | x | — | y |\n\n## Tests\n\n| `E_LATER` | | | |\n"
	got := readmeConfigVars(t, readme)
	want := []string{"A_ONE", "C_TWO", "D_THREE"}
	if strings.Join(sortedKeys(got), ",") != strings.Join(want, ",") {
		t.Fatalf("parsed %v, want %v", sortedKeys(got), want)
	}
}
