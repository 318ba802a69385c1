package walls

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every "docs/<page> §<n>" the repository cites exists as a heading.
func TestCitationsNameExistingSections(t *testing.T) {
	root := repoRoot(t)
	sections, err := Sections(filepath.Join(root, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"api.md", "design.md"} {
		if len(sections[page]) < 8 {
			t.Fatalf("docs/%s has %d numbered sections; the headings were not found", page, len(sections[page]))
		}
	}
	files, err := citingFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	cited := 0
	for _, f := range files {
		if f == filepath.Join("pkg", "walls", "citations_test.go") {
			continue // its bad citations are on purpose
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		cited += len(citation.FindAllString(text, -1))
		for _, v := range CheckCitations(f, text, sections) {
			t.Error(v)
		}
	}
	if cited < 100 {
		t.Fatalf("found %d citations; the code has well over 100", cited)
	}
}

func TestCitationCheckCatchesBadCitations(t *testing.T) {
	sections := map[string]map[string]bool{"api.md": {"4": true, "4.8": true}, "design.md": {"6": true}}
	tests := []struct {
		name string
		text string
		want string
	}{
		{name: "existing", text: "see docs/api.md §4.8 and docs/design.md §6."},
		{name: "split over comment lines", text: "(docs/api.md\n// §4.8)"},
		{name: "missing section", text: "docs/api.md §4.12", want: "docs/api.md §4.12, which has no such section"},
		{name: "missing page", text: "docs/spec.md §1", want: "docs/spec.md, which does not exist"},
		{name: "split and missing", text: "docs/design.md\n\t// §9", want: "docs/design.md §9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(CheckCitations("x.go", tt.text, sections), "\n")
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("CheckCitations = %q, want %q", got, tt.want)
			}
		})
	}
}
